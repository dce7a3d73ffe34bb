import path from 'node:path';
import { systemTxtResolver, type TxtResolver } from './ports/txt-resolver.ts';
import { mkdir } from 'node:fs/promises';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import { systemClock, type Clock } from './clock.ts';
import type { RelationalStore } from './ports/relational-store.ts';
import type { AnalyticalStore } from './ports/analytical-store.ts';
import type { Bus } from './ports/bus.ts';
import type { RateLimiter } from './ports/rate-limiter.ts';
import type { Mailer } from './ports/mailer.ts';
import { migrateAnalytical, migrateRelational } from './migrate.ts';
import type { OutboundUrlGuard } from './ports/outbound-url-guard.ts';
import { createPublicInternetGuard } from './adapters/outbound/public-internet-guard.ts';

/**
 * Everything a role needs, behind ports. Steps and routes see this, never a driver client.
 * Built once by the composition root; tests build it with overrides.
 */
export interface Platform {
  config: Config;
  logger: Logger;
  clock: Clock;
  db: RelationalStore;
  analytics: AnalyticalStore;
  bus: Bus;
  limiter: RateLimiter;
  mailer: Mailer;
  /** DNS TXT lookups (custom domain verification). */
  txt: TxtResolver;
  /** Every address dialled on a tenant's behalf (webhooks, repositories, builds' egress) passes this guard. */
  outbound: OutboundUrlGuard;
  close(): Promise<void>;
}

export type PlatformOverrides = Partial<Omit<Platform, 'config' | 'logger' | 'close'>>;

/** Choose one adapter per port from the configuration, log the choice, and apply migrations. */
export async function createPlatform(config: Config, logger: Logger, overrides: PlatformOverrides = {}): Promise<Platform> {
  const dataDir = path.resolve(config.DATA_DIR);
  const needsDataDir = !config.DATABASE_URL || !config.CLICKHOUSE_URL || !config.SMTP_URL || !config.KAFKA_BROKERS;
  if (needsDataDir) await mkdir(dataDir, { recursive: true });
  const clock = overrides.clock ?? systemClock;

  const db =
    overrides.db ??
    (config.DATABASE_URL
      ? await (await import('./adapters/relational/pg-store.ts')).createPgStore(config.DATABASE_URL)
      : await (await import('./adapters/relational/pglite-worker-store.ts')).createPgliteWorkerStore(path.join(dataDir, 'pglite')));
  const analytics =
    overrides.analytics ??
    (config.CLICKHOUSE_URL
      ? await (await import('./adapters/analytical/clickhouse-store.ts')).createClickhouseStore(config.CLICKHOUSE_URL)
      : await (await import('./adapters/analytical/chdb-store.ts')).createChdbStore(path.join(dataDir, 'chdb')));
  const bus =
    overrides.bus ??
    (config.KAFKA_BROKERS
      ? await (await import('./adapters/bus/kafka-bus.ts')).createKafkaBus({
          brokers: config.KAFKA_BROKERS.split(','),
          clientId: config.KAFKA_CLIENT_ID,
          logger,
        })
      : (await import('./adapters/bus/in-process-bus.ts')).createInProcessBus({ logDir: path.join(dataDir, 'bus'), logger }));
  const limiter =
    overrides.limiter ??
    (config.REDIS_URL
      ? await (await import('./adapters/rate-limit/redis-limiter.ts')).createRedisLimiter(config.REDIS_URL)
      : (await import('./adapters/rate-limit/memory-limiter.ts')).createMemoryLimiter(clock));
  const mailer =
    overrides.mailer ??
    (config.SMTP_URL
      ? (await import('./adapters/mail/smtp-mailer.ts')).createSmtpMailer(config.SMTP_URL, config.MAIL_FROM)
      : (await import('./adapters/mail/file-mailer.ts')).createFileMailer(path.join(dataDir, 'mail'), config.MAIL_FROM, logger));

  logger.info(
    { relational: db.adapter, analytical: analytics.adapter, bus: bus.adapter, rateLimits: limiter.adapter, mail: mailer.adapter },
    'adapters chosen',
  );
  await migrateRelational(db, logger);
  await migrateAnalytical(analytics, logger);

  const platform: Platform = {
    config,
    logger,
    clock,
    db,
    analytics,
    bus,
    limiter,
    mailer,
    txt: overrides.txt ?? systemTxtResolver,
    outbound: overrides.outbound ?? createPublicInternetGuard({ allowLocalWebhooks: config.ALLOW_LOCAL_WEBHOOKS }),
    async close() {
      await bus.close().catch(() => undefined);
      await limiter.close().catch(() => undefined);
      await mailer.close().catch(() => undefined);
      await analytics.close().catch(() => undefined);
      await db.close().catch(() => undefined);
    },
  };
  return platform;
}
