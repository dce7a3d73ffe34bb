import { describeWith } from '../../test/support/backends.ts';
import { defineCodeHostScenarios } from './code-host.test-scenarios.ts';

describeWith(['postgres', 'kafka', 'clickhouse'], 'inbound webhooks on real backends', () =>
  defineCodeHostScenarios('GitHub deliveries on Postgres, Kafka and ClickHouse', { real: { postgres: true, kafka: true, clickhouse: true } }),
);
