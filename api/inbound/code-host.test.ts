import { defineCodeHostScenarios } from './code-host.test-scenarios.ts';

defineCodeHostScenarios('inbound GitHub webhooks on the embedded defaults');
