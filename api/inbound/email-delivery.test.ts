import { defineEmailDeliveryScenarios } from './email-delivery.test-scenarios.ts';

defineEmailDeliveryScenarios('email delivery events (embedded)');
