import path from 'node:path';
import { systemTxtResolver, type TxtResolver } from './ports/txt-resolver.ts';
import { mkdir } from 'node:fs/promises';
import { BACKEND_URL, BACKENDS, type Backend, type Config } from './config.ts';
import { lockDataDir } from './data-dir/data-dir-lock.ts';
import { openEmbedded } from './data-dir/damaged-data-dir.ts';
import { answerBackups } from './data-dir/snapshot.ts';
import { NO_DATA_DIR_WRITES, reportingDiskFull, startDiskSpaceWatch, type DiskSpace } from './data-dir/disk-space.ts';
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
import { withNameSuffix } from './adapters/bus/name-suffix.ts';

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
  /** DATA_DIR's free space (data-dir/disk-space.ts): while low, ingest, API writes and builds are refused. */
  disk: DiskSpace;
  close(): Promise<void>;
}

export type PlatformOverrides = Partial<Omit<Platform, 'config' | 'logger' | 'close'>>;

export interface PlatformOptions {
  /** The ports this process opens (a role's ROLE_BACKENDS); the others answer every use with an error naming them. */
  backends?: readonly Backend[];
  /** What this process is, written beside the data directory's lock for whoever is refused by it. */
  command?: string;
  /** Writes under DATA_DIR beyond the embedded engines and mail files (a builder's artifacts): its disk is watched. */
  writesDataDir?: boolean;
}

/**
 * Choose one adapter per port the role uses from the configuration, log the choice, and apply migrations.
 *
 * When any embedded engine opens (PGlite, chDB, the bus's log), the data directory's lock is taken first
 * (data-dir/data-dir-lock.ts): a second process is refused before it opens anything. An engine that cannot open
 * its files is reported by name with the way back (data-dir/damaged-data-dir.ts), never as a bare `Aborted()`.
 */
export async function createPlatform(config: Config, logger: Logger, overrides: PlatformOverrides = {}, opts: PlatformOptions = {}): Promise<Platform> {
  const dataDir = path.resolve(config.DATA_DIR);
  const backends = new Set(opts.backends ?? BACKENDS);
  const uses = (b: Backend) => backends.has(b) && !overrides[OVERRIDE_OF[b]];
  const embedded = (['relational', 'analytical', 'bus'] as const).filter((b) => uses(b) && !config[BACKEND_URL[b]]);
  const lock = embedded.length ? await lockDataDir(dataDir, opts.command ?? 'the service') : undefined;
  const fileMail = uses('mail') && !config.SMTP_URL;
  const writesDataDir = embedded.length > 0 || fileMail || opts.writesDataDir === true;
  if (!lock && writesDataDir) await mkdir(dataDir, { recursive: true });
  const clock = overrides.clock ?? systemClock;
  // Where something writes under DATA_DIR, its free space is watched, and the adapters that write there report a
  // write that failed for want of space at once.
  const disk =
    overrides.disk ??
    (writesDataDir ? await startDiskSpaceWatch({ dir: dataDir, minFreeBytes: config.DATA_DIR_MIN_FREE_MB * 1024 * 1024, logger }) : NO_DATA_DIR_WRITES);
  const opened = new Map<Backend, { close(): Promise<void> }>();
  /**
   * One port: the test's override, or nothing for a port the role does not open, or the production adapter when its
   * variable (BACKEND_URL) is set, else the embedded one (named with the way back if it cannot open its files).
   */
  const port = async <T extends { close(): Promise<void> }>(
    b: Backend,
    override: T | undefined,
    onServer: (url: string) => Promise<T>,
    embeddedDefault: () => Promise<T>,
  ): Promise<T> => {
    if (override) return override;
    if (!backends.has(b)) return notOpened<T>(b, opts.command);
    const url = config[BACKEND_URL[b]] as string | undefined;
    const made = url
      ? await onServer(url)
      : embedded.includes(b as (typeof embedded)[number])
        ? await openEmbedded(b, dataDir, embeddedDefault)
        : await embeddedDefault();
    // What writes under DATA_DIR (every embedded default but the in-memory rate limits) tells the disk watch at once
    // when a write failed for want of space.
    const adapter = url || b === 'rateLimits' ? made : reportingDiskFull(made, disk);
    opened.set(b, adapter);
    return adapter;
  };

  try {
    const db = await port<RelationalStore>(
      'relational',
      overrides.db,
      async (url) => (await import('./adapters/relational/pg-store.ts')).createPgStore(url),
      async () => (await import('./adapters/relational/pglite-worker-store.ts')).createPgliteWorkerStore(path.join(dataDir, 'pglite')),
    );
    const analytics = await port<AnalyticalStore>(
      'analytical',
      overrides.analytics,
      async (url) => (await import('./adapters/analytical/clickhouse-store.ts')).createClickhouseStore(url),
      async () => (await import('./adapters/analytical/chdb-store.ts')).createChdbStore(path.join(dataDir, 'chdb')),
    );
    const bus = withNameSuffix(
      await port<Bus>(
        'bus',
        overrides.bus,
        async (url) => (await import('./adapters/bus/kafka-bus.ts')).createKafkaBus({ brokers: url.split(','), clientId: config.KAFKA_CLIENT_ID, logger }),
        async () => (await import('./adapters/bus/in-process-bus.ts')).createInProcessBus({ logDir: path.join(dataDir, 'bus'), logger }),
      ),
      config.BUS_NAME_SUFFIX,
    );
    const limiter = await port<RateLimiter>(
      'rateLimits',
      overrides.limiter,
      async (url) => (await import('./adapters/rate-limit/redis-limiter.ts')).createRedisLimiter(url),
      async () => (await import('./adapters/rate-limit/memory-limiter.ts')).createMemoryLimiter(clock),
    );
    const mailer = await port<Mailer>(
      'mail',
      overrides.mailer,
      async (url) => (await import('./adapters/mail/smtp-mailer.ts')).createSmtpMailer(url, config.MAIL_FROM),
      async () => (await import('./adapters/mail/file-mailer.ts')).createFileMailer(path.join(dataDir, 'mail'), config.MAIL_FROM, logger),
    );

    const adapters: Record<Backend, { adapter: string; close(): Promise<void> }> = {
      relational: db,
      analytical: analytics,
      bus,
      rateLimits: limiter,
      mail: mailer,
    };
    const chosen = Object.fromEntries([...backends].map((b) => [b, adapters[b].adapter]));
    logger.info({ ...chosen, ...(lock ? { dataDir } : {}) }, 'adapters chosen');
    if (backends.has('relational')) await migrateRelational(db, logger);
    if (backends.has('analytical')) await migrateAnalytical(analytics, logger);
    // The data directory's owner makes the consistent copy `npm run backup` asks for (data-dir/snapshot.ts).
    const backups = lock ? await answerBackups(dataDir, logger, { relational: db, analytical: analytics, bus }, embedded) : undefined;

    return {
      config,
      logger,
      clock,
      db,
      analytics,
      bus,
      limiter,
      mailer,
      txt: overrides.txt ?? systemTxtResolver,
      outbound: overrides.outbound ?? createPublicInternetGuard({ allowLocal: config.ALLOW_LOCAL_OUTBOUND }),
      disk,
      async close() {
        disk.close();
        await backups?.close();
        // The bus first (nothing more is published or consumed), the stores last; then the data directory is free.
        for (const b of ['bus', 'rateLimits', 'mail', 'analytical', 'relational'] as const)
          await opened
            .get(b)
            ?.close()
            .catch(() => undefined);
        await lock?.release();
      },
    };
  } catch (err) {
    disk.close();
    for (const adapter of [...opened.values()].reverse()) await adapter.close().catch(() => undefined);
    await lock?.release();
    throw err;
  }
}

const OVERRIDE_OF: Record<Backend, keyof PlatformOverrides> = {
  relational: 'db',
  analytical: 'analytics',
  bus: 'bus',
  rateLimits: 'limiter',
  mail: 'mailer',
};

/** A port this role does not open: any use is a bug in the role's ROLE_BACKENDS, said as such. */
function notOpened<T extends object>(backend: Backend, command = 'this process'): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      if (prop === 'adapter') return 'not opened';
      if (prop === 'close') return async () => undefined;
      if (prop === 'then') return undefined;
      throw new Error(`${command} does not open the ${backend} port (platform/config.ts ROLE_BACKENDS); it was asked for ${String(prop)}`);
    },
  });
}
