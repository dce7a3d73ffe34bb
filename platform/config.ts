import { z } from 'zod';

/**
 * The whole configuration, parsed once from the environment. Every key is documented in the
 * README's configuration table. A production adapter is chosen when its address is set; otherwise
 * the embedded default runs (PGlite, chDB, in-process bus, in-memory limits, mail to files).
 */
const emptyAsUndefined = (v: unknown) => (v === '' ? undefined : v);
const optionalUrl = (schemes: string[]) =>
  z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .refine(
        (v) => {
          try {
            return schemes.includes(new URL(v).protocol.replace(':', ''));
          } catch {
            return false;
          }
        },
        `must be a URL with scheme ${schemes.join(' or ')}`,
      )
      .optional(),
  );
const bool = z.preprocess(
  (v) => (v === undefined || v === '' ? undefined : String(v).toLowerCase()),
  z
    .enum(['true', 'false', '1', '0'])
    .transform((v) => v === 'true' || v === '1')
    .optional(),
);

export /** A comma-separated list of secrets (rotation: old and new both accepted); empty entries dropped. */
const secretList = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : v === undefined
        ? []
        : v,
  z.array(z.string().min(8, 'a signing secret of at least 8 characters')).max(8),
);

const ConfigSchema = z.object({
  /** PORT: the HTTP port. In the single process every /v1 route answers here. */
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** HOST: address to bind. */
  HOST: z.string().default('0.0.0.0'),
  /** DATA_DIR: where the embedded engines and mail files live; survives restarts. */
  DATA_DIR: z.string().default('./data'),
  /**
   * DATA_DIR_MIN_FREE_MB: free space DATA_DIR's disk keeps in reserve. Under it (checked every 2 s, and at once when a
   * write fails for want of space) ingest answers 503, API writes answer 503 and builds do not start; reads go on, and
   * everything is taken again by itself once there is room. 0: only a failed write turns it on.
   */
  DATA_DIR_MIN_FREE_MB: z.coerce.number().int().min(0).default(256),
  /** PUBLIC_BASE_URL: the service's public base (links in email, hook URLs, cookie Secure flag). */
  PUBLIC_BASE_URL: optionalUrl(['http', 'https']),
  /** DATABASE_URL: Postgres; unset = PGlite under DATA_DIR. */
  DATABASE_URL: optionalUrl(['postgres', 'postgresql']),
  /** CLICKHOUSE_URL: ClickHouse HTTP interface; unset = chDB under DATA_DIR. */
  CLICKHOUSE_URL: optionalUrl(['http', 'https']),
  /** KAFKA_BROKERS: comma-separated host:port list; unset = in-process bus. */
  KAFKA_BROKERS: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[^\s,]+:\d+(,[^\s,]+:\d+)*$/, 'must be host:port[,host:port...]')
      .optional(),
  ),
  /** KAFKA_CLIENT_ID: client id prefix for Kafka connections. */
  KAFKA_CLIENT_ID: z.string().default('service'),
  /**
   * BUS_NAME_SUFFIX: appended to every bus topic and consumer group name (schemas/topics.ts), so two deployments can
   * share one Kafka cluster without reading each other's messages or joining each other's groups: with `.staging`,
   * `errors.events.v1` is `errors.events.v1.staging`. Empty: the names as they are. Kafka topic name characters only.
   */
  BUS_NAME_SUFFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]{0,100}$/, 'at most 100 letters, digits, ".", "_" or "-" (what a Kafka topic name may hold)')
    .default(''),
  /** REDIS_URL: shared rate limits across edge nodes; unset = in-memory. */
  REDIS_URL: optionalUrl(['redis', 'rediss']),
  /** SMTP_URL: outgoing mail; unset = .eml files under DATA_DIR/mail. */
  SMTP_URL: optionalUrl(['smtp', 'smtps']),
  /** MAIL_FROM: sender address of alert mail. */
  MAIL_FROM: z.string().default('Service Alerts <alerts@localhost>'),
  /** LOG_LEVEL: pino level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** OWNER_EMAIL / OWNER_PASSWORD: the first-start owner account (password generated when unset). */
  OWNER_EMAIL: z.string().email().default('owner@example.com'),
  OWNER_PASSWORD: z.preprocess(emptyAsUndefined, z.string().min(12).optional()),
  /** WIDGET_HOSTS: comma-separated hosts always allowed to post errors from browsers (§7.3). */
  WIDGET_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    ),
  /** SETTINGS_REFRESH_MS: how often the edge refreshes keys, settings and caps from Postgres. */
  SETTINGS_REFRESH_MS: z.coerce.number().int().min(100).default(2000),
  /** TRUST_PROXY: take the client IP from X-Forwarded-For (behind the reverse proxy). */
  TRUST_PROXY: bool.default(false),
  /** BUILD_TIMEOUT_MS: wall-clock limit of one build; past it the build's process group is killed. */
  BUILD_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(10 * 60 * 1000),
  /**
   * BUILD_SANDBOX: `on` runs every build in a bubblewrap sandbox (README, "Tenants are strangers"); where bwrap is
   * missing, builds fail with sandbox_unavailable. `off` runs builds as plain processes of the service's user:
   * only for a single-tenant machine, and every start and build log says so.
   */
  BUILD_SANDBOX: z.enum(['on', 'off']).default('on'),
  /**
   * BUILD_ALLOW_UNLIMITED: where no cgroup can be made for a build (no delegated cgroup v2 subtree, no writable v1
   * memory and pids hierarchies), `true` runs builds without memory or process limits, warned of at every start and
   * in every build log (single-tenant machines only); unset, such builds fail with limits_unavailable. Where cgroups
   * can be made, limits are enforced either way.
   */
  BUILD_ALLOW_UNLIMITED: bool.default(false),
  /** BUILD_NETWORK: `proxy` lets builds reach public addresses only through the builder's guarded proxy; `none` cuts them off. */
  BUILD_NETWORK: z.enum(['proxy', 'none']).default('proxy'),
  /** BUILD_DIR: where builds run (checkouts; removed after each build). Only traversable by others (0711). */
  BUILD_DIR: z.preprocess(emptyAsUndefined, z.string().optional()),
  /** BUILD_UID: the unprivileged host user sandboxed builds run as (when the service runs as root). */
  BUILD_UID: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31)
    .default(65534),
  /** BUILD_MEMORY_MB: memory of one build, every process included (cgroup); past it: memory_limit. */
  BUILD_MEMORY_MB: z.coerce.number().int().min(16).default(2048),
  /** BUILD_PIDS: processes one build may have at once (cgroup); a fork past it fails, the build: process_limit. */
  BUILD_PIDS: z.coerce.number().int().min(8).default(512),
  /** BUILD_CPU_SECONDS: CPU time of one build, every process included; past it: cpu_limit. */
  BUILD_CPU_SECONDS: z.coerce.number().int().min(1).default(1200),
  /** BUILD_DISK_MB: bytes one build may write under its directory (checkout, dependencies, output); past it: disk_limit. */
  BUILD_DISK_MB: z.coerce.number().int().min(1).default(8192),
  /** BUILD_TMP_MB: size of a sandboxed build's private /tmp (memory-backed, counted in BUILD_MEMORY_MB). */
  BUILD_TMP_MB: z.coerce.number().int().min(1).default(512),
  /**
   * BUILD_CACHE_MAX_MB: the build cache of one project and branch (builder/build-cache/: node_modules and the package
   * managers' caches, restored before the build command, saved after a successful build); a larger one is not saved.
   * 0 turns the build cache off. BUILD_CACHE_TOTAL_MB: every project's caches together under DATA_DIR/build-cache;
   * past it the least recently used go.
   */
  BUILD_CACHE_MAX_MB: z.coerce.number().int().min(0).default(1024),
  BUILD_CACHE_TOTAL_MB: z.coerce.number().int().min(1).default(10240),
  /** ARTIFACT_MAX_BYTES: total bytes of a deploy's output; past it: artifact_too_large. */
  ARTIFACT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(1024 ** 3),
  /** ARTIFACT_MAX_FILES: files in a deploy's output; past it: too_many_files. */
  ARTIFACT_MAX_FILES: z.coerce.number().int().min(1).default(20_000),
  /** ARTIFACT_MAX_FILE_BYTES: one file of a deploy's output; past it: file_too_large. */
  ARTIFACT_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(256 * 1024 ** 2),
  /** ARTIFACTS_KEPT: per project, the newest ready deploys whose artifacts are kept (the live one always is). */
  ARTIFACTS_KEPT: z.coerce.number().int().min(1).default(10),
  /**
   * ARTIFACTS_PROJECT_MAX_MB, ARTIFACTS_ACCOUNT_MAX_MB: what a project's kept outputs, and all the projects of one
   * owner together, may hold, at apparent size (a sparse file counts as its length). A new output first releases the
   * oldest outputs that are not live (this project's, then the account's others'); one that still does not fit fails
   * quota_exceeded and nothing of it is kept.
   */
  ARTIFACTS_PROJECT_MAX_MB: z.coerce.number().int().min(1).default(2048),
  ARTIFACTS_ACCOUNT_MAX_MB: z.coerce.number().int().min(1).default(5120),
  /**
   * BUILD_MIN_FREE_MB: free space DATA_DIR's disk keeps for its databases against builds (the larger of it and
   * DATA_DIR_MIN_FREE_MB counts): under it a build does not start, and an output that would take the disk under it
   * is not kept; both fail disk_full. 0 (with DATA_DIR_MIN_FREE_MB 0): only a write that fails for want of space.
   */
  BUILD_MIN_FREE_MB: z.coerce.number().int().min(0).default(1024),
  /** BUILDS_PER_BUILDER: builds one builder process runs at once. */
  BUILDS_PER_BUILDER: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * GUARDED_ROLLOUT_SWEEP_MS: how often the builder looks at production deploys in their guarded rollout window
   * (builder/guarded-rollout/; each project's window and thresholds are its `guardedRollout` setting).
   */
  GUARDED_ROLLOUT_SWEEP_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /**
   * ALLOW_LOCAL_OUTBOUND: a developer's switch to try, on one machine, what the service dials for a tenant: webhook
   * endpoints and uptime monitors may be `http://` and loopback (127.0.0.0/8, ::1, `localhost` and `*.localhost`);
   * private ranges and metadata addresses stay refused, and repositories and builds' egress stay public-only.
   * Refused at start when PUBLIC_BASE_URL is https. ALLOW_LOCAL_WEBHOOKS (issue 23's name) is its alias: either turns
   * it on, and loadConfig sets both to the outcome.
   */
  ALLOW_LOCAL_OUTBOUND: bool.default(false),
  ALLOW_LOCAL_WEBHOOKS: bool.default(false),
  /** ALLOW_LOCAL_REPOS: accept local paths and file:// as a project's repository (tests, one machine). */
  ALLOW_LOCAL_REPOS: bool.default(false),
  /** SITES_DOMAIN: ready deploys are served at <slug>.<SITES_DOMAIN> (production) and <deployId>.<SITES_DOMAIN> (any). */
  SITES_DOMAIN: z.string().default('localhost'),
  /**
   * Inbound provider webhooks (spec §4.2): the signing secrets each provider signs its deliveries with. Comma-separated:
   * during a rotation both the old and the new secret are accepted. Unset: the route answers 401 invalid_signature to
   * every delivery (nothing unsigned is ever taken). Never logged.
   * GITHUB_WEBHOOK_SECRETS: the secret of the GitHub App or repository webhooks that post to /v1/webhooks/code_host.
   */
  GITHUB_WEBHOOK_SECRETS: secretList,
  /**
   * The GitHub App repositories connect through (README, "Deploying from GitHub"): GITHUB_APP_ID its App ID,
   * GITHUB_APP_PRIVATE_KEY its private key (PEM; `\n` escapes are taken), GITHUB_APP_CLIENT_ID and
   * GITHUB_APP_CLIENT_SECRET its user OAuth credentials, GITHUB_APP_SLUG the name in its public page's address (the
   * install link). All four credentials or none; unset: connecting a repository answers 503 github_app_not_configured.
   * The key and the client secret are never logged.
   */
  GITHUB_APP_ID: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^\d{1,12}$/, 'the App ID, a number')
      .optional(),
  ),
  GITHUB_APP_PRIVATE_KEY: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() ? v.replace(/\\n/g, '\n') : undefined),
    z.string().includes('PRIVATE KEY-----', { message: 'a PEM private key' }).optional(),
  ),
  GITHUB_APP_CLIENT_ID: z.preprocess(emptyAsUndefined, z.string().max(100).optional()),
  GITHUB_APP_CLIENT_SECRET: z.preprocess(emptyAsUndefined, z.string().max(200).optional()),
  GITHUB_APP_SLUG: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^[a-z0-9-]{1,100}$/i, 'the app slug, as in https://github.com/apps/<slug>')
      .optional(),
  ),
  /** GITHUB_API_URL: GitHub's REST API (`https://<host>/api/v3` for GitHub Enterprise Server); https, through the outbound guard. */
  GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  /** STRIPE_WEBHOOK_SECRETS: `whsec_...` of the endpoint for the platform's own billing events (/v1/webhooks/payments). */
  STRIPE_WEBHOOK_SECRETS: secretList,
  /** STRIPE_CONNECT_WEBHOOK_SECRETS: `whsec_...` of the Connect endpoint: connected accounts' events (/v1/webhooks/payments/connect). */
  STRIPE_CONNECT_WEBHOOK_SECRETS: secretList,
  /**
   * Stripe Connect through OAuth (README, "Connecting a Stripe account"): STRIPE_CONNECT_CLIENT_ID the platform's
   * `ca_...`, STRIPE_SECRET_KEY the platform's secret key (`sk_...`, or a restricted `rk_...`) the token exchange
   * authenticates with. Both or neither; unset: connecting an account answers 503 stripe_connect_not_configured. The key
   * is never logged.
   */
  STRIPE_CONNECT_CLIENT_ID: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^ca_[A-Za-z0-9]{1,200}$/, "the platform's Connect client id, ca_...")
      .optional(),
  ),
  STRIPE_SECRET_KEY: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .regex(/^(sk|rk)_(live|test)_[A-Za-z0-9]{1,400}$/, "the platform's secret key, sk_live_... or sk_test_...")
      .optional(),
  ),
  /**
   * STRIPE_CONNECT_URL: Stripe's Connect OAuth host: the browser is sent to its /oauth/authorize, and the service posts
   * to its /oauth/token and /oauth/deauthorize. https only; the service's calls go through the outbound guard, which
   * refuses loopback and private addresses (no configuration relaxes it for these calls).
   */
  STRIPE_CONNECT_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .default('https://connect.stripe.com')
      .refine((v) => URL.canParse(v) && new URL(v).protocol === 'https:', 'must be a URL with scheme https'),
  ),
  /** INBOUND_EMAIL_DOMAIN: mailbox inboxes receive at <local part>@<project slug>.<INBOUND_EMAIL_DOMAIN> (the domain Resend receives for). */
  INBOUND_EMAIL_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/i, 'a domain name')
    .default('mail.localhost'),
  /** RESEND_WEBHOOK_SECRETS: `whsec_...` of the Resend webhook (delivery events and inbound mail, /v1/webhooks/email). */
  RESEND_WEBHOOK_SECRETS: secretList,
  /**
   * RESEND_API_KEY: `re_...`, read-only is enough. Resend's email.received carries no message body: with a key, the
   * inbound pipeline fetches the raw message from Resend's received-emails API (RESEND_API_URL). Unset: only events
   * that carry `data.raw` (base64) become mail. Never logged.
   */
  RESEND_API_KEY: z.preprocess(emptyAsUndefined, z.string().optional()),
  /** RESEND_API_URL: Resend's API; https only, through the outbound guard. */
  RESEND_API_URL: z.string().default('https://api.resend.com'),
  /**
   * PIPELINE_LINGER_MS: how long the processor's pipelines (errors, analytics, client items) let a small batch wait
   * for more before handling it (SubscribeOptions.lingerMs). At a trickle of events each handling is one database
   * transaction and one analytical insert for many events instead of one each (issue 44: a small site's errors
   * should cost almost nothing); under load batches fill and go at once. 0 hands every delivery over at once.
   * Measured (bench/README.md, Footprint): CPU per event at 40 events/s 27.9 ms at 0, 8.4 at 250, 4.9 at 500, 3.5 at
   * 1000; 500 keeps every event visible within a second of the load ending.
   */
  PIPELINE_LINGER_MS: z.coerce.number().int().min(0).max(5000).default(500),
  /** ANALYTICS_RETENTION_DAYS: analytics events older than this (by event time) are deleted by ClickHouse's TTL. */
  ANALYTICS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  /**
   * METRICS_TOKEN: `GET /metrics` answers only a caller sending `Authorization: Bearer <this>`; unset, /metrics is
   * answered as a route that does not exist. At least 16 characters. Never logged.
   */
  METRICS_TOKEN: z.preprocess(emptyAsUndefined, z.string().min(16, 'a token of at least 16 characters').optional()),
});

export type Config = z.infer<typeof ConfigSchema>;
export type Role = 'all' | 'ingest' | 'processor' | 'api' | 'builder';

export class ConfigError extends Error {}

/** Parse the environment; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  // One switch under two names: either turns it on, and both then read the same.
  const named = parsed.data.ALLOW_LOCAL_OUTBOUND ? 'ALLOW_LOCAL_OUTBOUND' : 'ALLOW_LOCAL_WEBHOOKS';
  const local = parsed.data.ALLOW_LOCAL_OUTBOUND || parsed.data.ALLOW_LOCAL_WEBHOOKS;
  parsed.data.ALLOW_LOCAL_OUTBOUND = parsed.data.ALLOW_LOCAL_WEBHOOKS = local;
  if (local && parsed.data.PUBLIC_BASE_URL?.startsWith('https:')) {
    throw new ConfigError(`invalid configuration: ${named} is a development switch and cannot be set on a public https deployment (PUBLIC_BASE_URL is https)`);
  }
  if (!parsed.data.STRIPE_CONNECT_CLIENT_ID !== !parsed.data.STRIPE_SECRET_KEY) {
    throw new ConfigError('invalid configuration: Stripe Connect needs STRIPE_CONNECT_CLIENT_ID and STRIPE_SECRET_KEY together');
  }
  const app = ['GITHUB_APP_ID', 'GITHUB_APP_PRIVATE_KEY', 'GITHUB_APP_CLIENT_ID', 'GITHUB_APP_CLIENT_SECRET'] as const;
  const missing = app.filter((k) => !parsed.data[k]);
  if (missing.length && missing.length < app.length) {
    throw new ConfigError(`invalid configuration: the GitHub App needs ${app.join(', ')} together; missing ${missing.join(', ')}`);
  }
  return parsed.data;
}

/** The ports a role opens an adapter for. A role opens only these: an edge never starts chDB, a builder never mails. */
export type Backend = 'relational' | 'analytical' | 'bus' | 'rateLimits' | 'mail';
export const BACKENDS: readonly Backend[] = ['relational', 'analytical', 'bus', 'rateLimits', 'mail'];

export const ROLE_BACKENDS: Record<Role, readonly Backend[]> = {
  all: BACKENDS,
  // Keys, settings and caps (relational), the batch onto the bus, the rate limits.
  ingest: ['relational', 'bus', 'rateLimits'],
  // Pipelines into Postgres and ClickHouse, webhook fan-out, alert and uptime mail.
  processor: ['relational', 'analytical', 'bus', 'mail'],
  // Reads and writes of every family, sign-in limits, test alert mail.
  api: ['relational', 'analytical', 'bus', 'rateLimits', 'mail'],
  // Deploy rows, build logs in ClickHouse, deploy events.
  builder: ['relational', 'analytical', 'bus'],
};

/** The variable that points a port at its production server (unset: the embedded default). */
export const BACKEND_URL: Record<Backend, keyof Config> = {
  relational: 'DATABASE_URL',
  analytical: 'CLICKHOUSE_URL',
  bus: 'KAFKA_BROKERS',
  rateLimits: 'REDIS_URL',
  mail: 'SMTP_URL',
};

/**
 * Which variables each role needs in the distributed setup (the embedded engines are single-process): the server of
 * every port it opens, and the public base URL where it writes links (alert mail, API answers).
 */
export const DISTRIBUTED_REQUIRED: Record<Exclude<Role, 'all'>, Array<keyof Config>> = {
  ingest: ROLE_BACKENDS.ingest.map((b) => BACKEND_URL[b]),
  processor: [...ROLE_BACKENDS.processor.map((b) => BACKEND_URL[b]), 'PUBLIC_BASE_URL'],
  api: [...ROLE_BACKENDS.api.map((b) => BACKEND_URL[b]), 'PUBLIC_BASE_URL'],
  builder: ROLE_BACKENDS.builder.map((b) => BACKEND_URL[b]),
};

/** The public base URL without a trailing slash; `http://localhost:$PORT` when PUBLIC_BASE_URL is unset. */
export function publicBaseUrl(config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT'>): string {
  return (config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');
}
