import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { start, type Running } from '../../service/service.ts';
import { describeWith } from '../support/backends.ts';
import { distributedEnv } from './support/distributed-env.ts';
import { parseMessage, startSmtpReceiver } from '../support/smtp-receiver.ts';
import { defineErrorTrackingScenarios, type E2eService } from './error-tracking.test-scenarios.ts';

/**
 * Every error-tracking rule through the whole path, twice: the embedded defaults (`start('all')`,
 * one port) and the distributed setup (processor, api and ingest started as separate roles on
 * Postgres, Kafka, ClickHouse, Redis and a real SMTP receiver).
 */
const logger = createLogger('silent', 'e2e');
/** Quick settings refresh so pause and origin changes reach the edge within a test. */
const REFRESH_MS = '250';

describe('error tracking end to end, embedded defaults (one process)', () => {
  let dataDir: string;
  let running: Running;
  let service: E2eService;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-embedded-'));
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      PUBLIC_BASE_URL: 'http://localhost:8080',
      SETTINGS_REFRESH_MS: REFRESH_MS,
    });
    running = await start('all', config, logger);
    expect(running.port).toBeGreaterThan(0);
    expect(running.platform.bus.adapter).toBe('in-process');
    const url = `http://127.0.0.1:${running.port}`;
    const mailDir = path.join(dataDir, 'mail');
    service = {
      ingestUrl: url,
      apiUrl: url,
      platform: running.platform,
      async mails() {
        const files = (await readdir(mailDir).catch(() => [] as string[])).filter((f) => f.endsWith('.eml'));
        return Promise.all(
          files.map(async (f) => {
            const m = parseMessage(await readFile(path.join(mailDir, f), 'utf8'));
            return { to: (m.headers['to'] ?? '').split(',').map((s) => s.trim().replace(/^.*<(.*)>$/, '$1')), subject: m.subject, text: m.text };
          }),
        );
      },
    };
  });

  afterAll(async () => {
    await running?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  defineErrorTrackingScenarios(() => service);
});

describeWith(['postgres', 'kafka', 'clickhouse', 'redis'], 'error tracking end to end, Postgres + Kafka + ClickHouse + Redis + SMTP (three roles)', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpReceiver>>;
  const roles: Running[] = [];
  let service: E2eService;

  beforeAll(async () => {
    smtp = await startSmtpReceiver();
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-distributed-'));
    const config = loadConfig(distributedEnv({ dataDir, smtpUrl: smtp.url, overrides: { SETTINGS_REFRESH_MS: REFRESH_MS } }));
    const processor = await start('processor', config, logger);
    roles.push(processor);
    const api = await start('api', config, logger);
    roles.push(api);
    const ingest = await start('ingest', config, logger);
    roles.push(ingest);
    expect([
      processor.platform.bus.adapter,
      api.platform.db.adapter,
      api.platform.analytics.adapter,
      ingest.platform.limiter.adapter,
      processor.platform.mailer.adapter,
    ]).toEqual(['kafka', 'postgres', 'clickhouse', 'redis', 'smtp']);
    expect(api.port).toBeGreaterThan(0);
    expect(ingest.port).toBeGreaterThan(0);
    service = {
      ingestUrl: `http://127.0.0.1:${ingest.port}`,
      apiUrl: `http://127.0.0.1:${api.port}`,
      platform: api.platform,
      mails: async () => smtp.messages.map((m) => ({ to: m.to, subject: m.subject, text: m.text })),
    };
  });

  afterAll(async () => {
    // Edge first, then the API, then the processor: nothing accepted is left unconsumed by design.
    for (const r of [...roles].reverse()) await r.stop();
    await smtp?.stop();
  });

  defineErrorTrackingScenarios(() => service);
});
