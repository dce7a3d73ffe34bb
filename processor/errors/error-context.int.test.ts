import { describeWith } from '../../test/support/backends.ts';
import { defineErrorContextScenarios } from './error-context.test-scenarios.ts';

describeWith(['postgres', 'kafka', 'clickhouse'], 'error context through the pipeline (Postgres, Kafka, ClickHouse)', () => {
  defineErrorContextScenarios({ postgres: true, kafka: true, clickhouse: true });
});
