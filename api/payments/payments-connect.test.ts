import { definePaymentsConnectScenarios } from './payments-connect.test-scenarios.ts';

definePaymentsConnectScenarios('payments: connected accounts into order events (embedded)');
