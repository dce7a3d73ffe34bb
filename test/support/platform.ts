import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createPlatform, type Platform, type PlatformOverrides } from '../../platform/platform.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import { backendUrl } from './backends.ts';

/**
 * A Platform for tests, built as `npm start` builds it (createPlatform): embedded by default, under a temporary
 * DATA_DIR (PGlite on its worker thread, the in-process bus with its log on disk, in-memory limits, file mail);
 * pass `real` to use the real backends found by global setup. chDB binds one data directory per process, so every
 * embedded platform in a test process shares one chDB store (test files run in separate processes).
 * Publish resolves once the bus's log holds the messages, before they are processed: a test that reads what
 * processing made first awaits processed(platform).
 */
export interface TestPlatformOptions {
  real?: { postgres?: boolean; clickhouse?: boolean; kafka?: boolean; redis?: boolean };
  env?: Record<string, string>;
  overrides?: PlatformOverrides;
}

let sharedChdb: Promise<AnalyticalStore> | undefined;
let sharedChdbDir: string | undefined;

export async function sharedChdbStore(): Promise<AnalyticalStore> {
  if (!sharedChdb) {
    sharedChdb = (async () => {
      sharedChdbDir = await mkdtemp(path.join(os.tmpdir(), 'chdb-test-'));
      const { createChdbStore } = await import('../../platform/adapters/analytical/chdb-store.ts');
      const store = await createChdbStore(sharedChdbDir);
      // Shared for the whole process: closing it per platform would break the next test.
      return { ...store, close: async () => undefined } as AnalyticalStore;
    })();
  }
  return sharedChdb;
}

export async function createTestPlatform(opts: TestPlatformOptions = {}): Promise<Platform> {
  const dataDir = opts.env?.DATA_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'svc-test-')));
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PUBLIC_BASE_URL: 'http://localhost:8080',
    ...opts.env,
  };
  const need = (name: 'postgres' | 'clickhouse' | 'kafka' | 'redis') => {
    const url = backendUrl(name);
    if (!url) throw new Error(`test needs ${name} but it is not available`);
    return url;
  };
  if (opts.real?.postgres) env.DATABASE_URL = need('postgres');
  if (opts.real?.clickhouse) env.CLICKHOUSE_URL = need('clickhouse');
  if (opts.real?.kafka) env.KAFKA_BROKERS = need('kafka');
  if (opts.real?.redis) env.REDIS_URL = need('redis');
  const config = loadConfig(env);
  const logger = createLogger(config.LOG_LEVEL, 'test');
  const overrides: PlatformOverrides = { ...opts.overrides };
  if (!config.CLICKHOUSE_URL && !overrides.analytics) overrides.analytics = await sharedChdbStore();
  const platform = await createPlatform(config, logger, overrides);
  if (opts.env?.DATA_DIR) return platform;
  // The temporary DATA_DIR made here (PGlite's files, the bus's logs) goes with the platform.
  const close = platform.close;
  return {
    ...platform,
    async close() {
      await close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Resolves once every consumer of the platform's bus has processed what was published before the call, and what
 * that processing published in turn (a pipeline feeding the next): publish resolves once the bus holds the
 * messages, not once they are processed.
 */
export async function processed(platform: Pick<Platform, 'bus'>): Promise<void> {
  const { bus } = platform;
  if (!bus.drained) throw new Error(`the ${bus.adapter} bus cannot tell when its consumers caught up`);
  while (await bus.drained());
}
