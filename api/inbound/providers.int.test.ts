import { defineBillingScenarios } from '../billing/billing.test-scenarios.ts';
import { definePaymentsConnectScenarios } from '../payments/payments-connect.test-scenarios.ts';
import { describeWith } from '../../test/support/backends.ts';
import { defineEmailDeliveryScenarios } from './email-delivery.test-scenarios.ts';

/**
 * Stripe (connected accounts and the platform's billing) and Resend's delivery events in the production shape (issue
 * 25): deliveries cross Kafka to the inbound pipeline, state is in Postgres, order events go out on Kafka. The same
 * scenarios as the embedded runs; GitHub's and inbound mail's are code-host.int.test.ts and inbound-mail.int.test.ts.
 */
const real = { real: { postgres: true, kafka: true, clickhouse: true } };
describeWith(['postgres', 'kafka', 'clickhouse'], 'provider webhooks on real backends', () => {
  definePaymentsConnectScenarios('Stripe Connect on Postgres, Kafka and ClickHouse', real);
  defineBillingScenarios('Stripe billing on Postgres, Kafka and ClickHouse', real);
  defineEmailDeliveryScenarios('Resend delivery events on Postgres, Kafka and ClickHouse', real);
});
