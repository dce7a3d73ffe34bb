import { describeWith } from '../../test/support/backends.ts';
import { defineUptimeScenarios } from './uptime.test-scenarios.ts';

describeWith(['postgres', 'kafka', 'clickhouse'], 'uptime on real backends', () =>
  defineUptimeScenarios('uptime monitors and the status page on Postgres, Kafka and ClickHouse', { real: { postgres: true, kafka: true, clickhouse: true } }),
);
