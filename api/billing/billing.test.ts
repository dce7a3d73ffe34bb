import { defineBillingScenarios } from './billing.test-scenarios.ts';

defineBillingScenarios("billing: the platform's own Stripe events (embedded)");
