import { loadConfig } from '../../../platform/config.ts';
import { createLogger } from '../../../platform/logger.ts';
import { start, type Running } from '../../../service/service.ts';
import { backendUrl } from '../../support/backends.ts';
import type { ServiceUrls } from './http-client.ts';
import { isolatedBus } from './isolated-bus.ts';

/**
 * Configuration of the roles on the real backends (Postgres, ClickHouse, Kafka, Redis, SMTP), as
 * `service/main.ts` reads it from the environment, with bus names of this run's own (isolated-bus.ts); `overrides`
 * replace or add variables.
 */
export function distributedEnv(opts: { dataDir: string; smtpUrl: string; overrides?: Record<string, string> }): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: opts.dataDir,
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://localhost:8080',
    DATABASE_URL: backendUrl('postgres')!,
    CLICKHOUSE_URL: backendUrl('clickhouse')!,
    KAFKA_BROKERS: backendUrl('kafka')!,
    REDIS_URL: backendUrl('redis')!,
    SMTP_URL: opts.smtpUrl,
    ...isolatedBus('e2e'),
    ...opts.overrides,
  };
}

/**
 * The API and the ingest edge, each a role of its own in this process, on `env` (the processor runs elsewhere: the
 * crash tests kill and replace it). Both are pushed onto `running`, to be stopped in reverse.
 */
export async function startApiAndEdge(env: Record<string, string>, name: string, running: Running[]): Promise<{ api: Running; urls: ServiceUrls }> {
  const config = loadConfig(env);
  const logger = createLogger('silent', name);
  const api = await start('api', config, logger);
  running.push(api);
  const ingest = await start('ingest', config, logger);
  running.push(ingest);
  return { api, urls: { ingestUrl: `http://127.0.0.1:${ingest.port}`, apiUrl: `http://127.0.0.1:${api.port}` } };
}
