import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { Redis } from 'ioredis';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startKafkaMock } from './support/kafka-mock.ts';
import { startChdbHttpServer } from './support/chdb-http-server.ts';

/**
 * Finds or starts the real backends once per test run and hands their addresses to every test file
 * (inject('backends')). Postgres and Redis: the running servers (TEST_DATABASE_URL, TEST_REDIS_URL).
 * Kafka: a librdkafka mock cluster (kcat) unless TEST_KAFKA_BROKERS is set. ClickHouse: the
 * ClickHouse HTTP interface served from chDB unless TEST_CLICKHOUSE_URL is set.
 * With CI=true a missing backend fails the run instead of skipping its tests.
 */
type Backends = { postgres?: string; redis?: string; kafka?: string; clickhouse?: string; ci: boolean };

/**
 * The int and e2e projects both name this setup, and vitest runs it once per project in its one main process: the
 * backends are started once and shared (chDB cannot open a second data directory in one process), and stopped when
 * the last project is done.
 */
const shared = globalThis as { __testBackends?: Promise<{ backends: Backends; stop(): Promise<void> }>; __testBackendUsers?: number };

export default async function setup(project: TestProject) {
  shared.__testBackendUsers = (shared.__testBackendUsers ?? 0) + 1;
  const started = await (shared.__testBackends ??= startBackends());
  project.provide('backends', started.backends);
  return async () => {
    shared.__testBackendUsers = (shared.__testBackendUsers ?? 1) - 1;
    if (shared.__testBackendUsers > 0) return;
    shared.__testBackends = undefined;
    await started.stop();
  };
}

async function startBackends(): Promise<{ backends: Backends; stop(): Promise<void> }> {
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  // What `npm start` runs is the compiled service (service/build.mjs): built once here, before any test starts it.
  await promisify(execFile)(process.execPath, ['service/build.mjs'], { cwd: path.resolve(import.meta.dirname, '..') });
  const missing: string[] = [];
  const stops: Array<() => Promise<void>> = [];

  const postgres = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const pgOk = await pgReachable(postgres);
  if (!pgOk) missing.push(`postgres (${postgres})`);

  const redis = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const redisOk = await redisReachable(redis);
  if (!redisOk) missing.push(`redis (${redis})`);

  let kafka = process.env.TEST_KAFKA_BROKERS;
  if (!kafka) {
    try {
      const mock = await startKafkaMock();
      kafka = mock.brokers;
      stops.push(mock.stop);
    } catch (err) {
      missing.push(`kafka mock cluster (${(err as Error).message})`);
    }
  }

  let clickhouse = process.env.TEST_CLICKHOUSE_URL;
  let chDir: string | undefined;
  if (!clickhouse) {
    try {
      chDir = await mkdtemp(path.join(os.tmpdir(), 'chdb-http-'));
      const server = await startChdbHttpServer({ dataDir: chDir });
      clickhouse = server.url;
      stops.push(server.stop);
    } catch (err) {
      missing.push(`clickhouse http (${(err as Error).message})`);
    }
  }

  if (missing.length && ci) throw new Error(`CI requires every real backend; missing: ${missing.join(', ')}`);
  if (missing.length) console.warn(`[tests] backends missing, their tests skip: ${missing.join(', ')}`);

  return {
    backends: { postgres: pgOk ? postgres : undefined, redis: redisOk ? redis : undefined, kafka, clickhouse, ci },
    async stop() {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
      if (chDir) await rm(chDir, { recursive: true, force: true });
    },
  };
}

async function pgReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redisReachable(url: string): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    backends: Backends;
  }
}
