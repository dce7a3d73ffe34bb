import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { start, type Running } from '../../service/service.ts';
import { describeWith } from '../support/backends.ts';
import { distributedEnv } from './support/distributed-env.ts';
import { defineAnalyticsScenarios, defineFlagScenarios, type AnalyticsService } from './analytics.test-scenarios.ts';
import { definePostHogScenarios } from './posthog.test-scenarios.ts';

/** Every analytics rule through the whole path, embedded (one process) and distributed (three roles). */
const logger = createLogger('silent', 'e2e');
const REFRESH_MS = '250';

describe('analytics end to end, embedded defaults (one process)', () => {
  let dataDir: string;
  let running: Running;
  let service: AnalyticsService;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-analytics-'));
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      PUBLIC_BASE_URL: 'http://localhost:8080',
      SETTINGS_REFRESH_MS: REFRESH_MS,
    });
    running = await start('all', config, logger);
    const url = `http://127.0.0.1:${running.port}`;
    service = { ingestUrl: url, apiUrl: url, platform: running.platform };
  });
  afterAll(async () => {
    await running?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  defineAnalyticsScenarios(() => service);
  defineFlagScenarios(() => service);
  definePostHogScenarios(() => service);
});

describeWith(['postgres', 'kafka', 'clickhouse', 'redis'], 'analytics end to end, Postgres + Kafka + ClickHouse + Redis (three roles)', () => {
  const roles: Running[] = [];
  let service: AnalyticsService;

  beforeAll(async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-analytics-dist-'));
    const config = loadConfig(distributedEnv({ dataDir, smtpUrl: 'smtp://127.0.0.1:1', overrides: { SETTINGS_REFRESH_MS: REFRESH_MS } }));
    for (const role of ['processor', 'api', 'ingest'] as const) roles.push(await start(role, config, logger));
    const [processor, api, ingest] = roles as [Running, Running, Running];
    expect([processor.platform.bus.adapter, api.platform.analytics.adapter, ingest.platform.limiter.adapter]).toEqual(['kafka', 'clickhouse', 'redis']);
    service = { ingestUrl: `http://127.0.0.1:${ingest.port}`, apiUrl: `http://127.0.0.1:${api.port}`, platform: api.platform };
  });
  afterAll(async () => {
    for (const r of [...roles].reverse()) await r.stop();
  });

  defineAnalyticsScenarios(() => service);
  defineFlagScenarios(() => service);
  definePostHogScenarios(() => service);
});
