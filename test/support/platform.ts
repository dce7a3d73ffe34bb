import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createPlatform, type Platform, type PlatformOverrides } from '../../platform/platform.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import { backendUrl } from './backends.ts';

/**
 * A Platform for tests. Embedded by default (PGlite in memory, chDB, in-process bus without a log,
 * in-memory limits, file mail); pass `real` to use the real backends found by global setup.
 * chDB binds one data directory per process, so every embedded platform in a test process shares
 * one chDB store (test files run in separate processes).
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
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-test-'));
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
  if (!config.KAFKA_BROKERS && !overrides.bus) {
    // No log, like PGlite in memory: publish resolves once the consumers processed the messages.
    const { createInProcessBus } = await import('../../platform/adapters/bus/in-process-bus.ts');
    overrides.bus = createInProcessBus();
  }
  if (!config.DATABASE_URL && !overrides.db) {
    const { createPgliteStore } = await import('../../platform/adapters/relational/pglite-store.ts');
    overrides.db = await createPgliteStore(); // in memory: fast and isolated per platform
  }
  return createPlatform(config, logger, overrides);
}
