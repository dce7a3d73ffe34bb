import { defineUptimeScenarios } from './uptime.test-scenarios.ts';

defineUptimeScenarios('uptime monitors and the status page (embedded)');
