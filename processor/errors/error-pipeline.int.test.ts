import { describeWith } from '../../test/support/backends.ts';
import { defineErrorPipelineScenarios } from './error-pipeline.test-scenarios.ts';

describeWith(['postgres', 'kafka', 'clickhouse'], 'error pipeline (Postgres, Kafka, ClickHouse)', () => {
  defineErrorPipelineScenarios({ postgres: true, kafka: true, clickhouse: true });
});
