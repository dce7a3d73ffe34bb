import { describeWith } from '../../test/support/backends.ts';
import { defineReleaseHealthScenarios } from './release-health-pipeline.test-scenarios.ts';

describeWith(['postgres', 'kafka', 'clickhouse'], 'release health pipeline (Postgres, Kafka, ClickHouse)', () => {
  defineReleaseHealthScenarios({ real: { postgres: true, kafka: true, clickhouse: true } });
});
