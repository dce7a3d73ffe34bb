import { describeWith } from '../test/support/backends.ts';
import { defineDeployScenarios } from './deploys.test-scenarios.ts';

// Postgres and ClickHouse (over HTTP); builders on Kafka in processes of their own: test/e2e/deploys.e2e.test.ts.
describeWith(['postgres', 'clickhouse'], 'deploys on Postgres + ClickHouse', () => defineDeployScenarios({ real: { postgres: true, clickhouse: true } }));
