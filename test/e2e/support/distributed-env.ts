import { backendUrl } from '../../support/backends.ts';

/**
 * Configuration of the roles on the real backends (Postgres, ClickHouse, Kafka, Redis, SMTP), as
 * `service/main.ts` reads it from the environment; `overrides` replace or add variables.
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
    ...opts.overrides,
  };
}

