/**
 * The Node SDK: report a server's errors to the service (`POST /v1/errors/i`, `runtime: "node"`).
 *
 *   import { init } from '@cx/node';
 *   const errors = init();                       // SERVICE_INGEST_KEY, SERVICE_BASE_URL, SERVICE_DEPLOY_ID, SERVICE_GIT_SHA
 *   errors.captureException(err, { extra: { orderId } });
 *
 * - Events are queued and sent in batches: every 2 s, as soon as 10 are queued, and on flush(); each request
 *   at most 20 events and 64 KB (the edge's limits, §9).
 * - 429 and 503 back off for Retry-After (or 5 s) and the batch is sent again; other refusals drop it. A
 *   bounded queue drops the oldest events past `maxQueue` and counts them (`dropped`).
 * - `deployId` and `gitSha` default from SERVICE_DEPLOY_ID / SERVICE_GIT_SHA, which the platform's builds set,
 *   so the server stamps the environment (§7.4) with no configuration.
 * - With `captureUncaught` (the default), an uncaught exception or unhandled rejection is captured and flushed,
 *   then the process ends as Node would have: the error printed, exit code 1.
 * - An error carries the debug ids of the bundles its stack names (`_sentryDebugIds`, which bundler plugins and
 *   `sentry-cli sourcemaps inject` put in each file; sdk/node/debug-ids.ts), so the service finds their source maps.
 * - An error carries the last 50 breadcrumbs (sdk/node/breadcrumbs.ts): console output and outgoing http, https and
 *   fetch requests (method, origin and path, status; never a body or a query string), read from diagnostics
 *   channels; `addBreadcrumb` adds the app's own; `breadcrumbs: false` records none.
 * - Never throws into the application: a failing network is logged once per burst through `onError`.
 * - `capture(event, distinctId, properties)` sends analytics events the same way; `flags.isEnabled(key, distinctId)`
 *   and `flags.getVariant(...)` ask the service (sdk/node/flags-client.ts).
 * No dependencies: Node 18+'s fetch.
 */
import { randomUUID } from 'node:crypto';
import { createBatchSender } from './batch-sender.ts';
import { recordBreadcrumbs } from './breadcrumbs.ts';
import { debugIdsOf } from './debug-ids.ts';
import { createFlagsClient, type FlagsClient } from './flags-client.ts';
import { WIRE_LIMITS, WIRE_PATHS, type WireAnalyticsEvent, type WireBreadcrumb, type WireErrorEvent } from './wire.ts';

export type { FlagsClient } from './flags-client.ts';
export type { FlagAnswer, WireAnalyticsEvent, WireBreadcrumb, WireErrorEvent } from './wire.ts';
export { verifyWebhook, verifySignature, parseSignatureHeader, WebhookVerificationError, DEFAULT_TOLERANCE_SEC } from './webhook-verifier.ts';
export type { VerifyOptions, WebhookPayload, ParsedSignatureHeader } from './webhook-verifier.ts';
export {
  createErrorForwarder,
  createForwarder,
  SAME_ORIGIN_ERRORS_PATH,
  SAME_ORIGIN_ANALYTICS_PATH,
  SAME_ORIGIN_FLAGS_PATH,
  SAME_ORIGIN_SESSIONS_PATH,
} from './forwarder.ts';
export type { ErrorForwarder, ForwarderOptions, ForwardedAnswer, ForwardInput, FastifyLike } from './forwarder.ts';

export interface NodeClientOptions {
  ingestKey?: string;
  /** The service's base URL, e.g. `https://service.example.com`. */
  baseUrl?: string;
  deployId?: string;
  gitSha?: string;
  flushIntervalMs?: number;
  /** Most events held while the service cannot take them; the oldest go first. */
  maxQueue?: number;
  captureUncaught?: boolean;
  /** Record console output and outgoing http/https/fetch requests, sent with each error (default true). */
  breadcrumbs?: boolean;
  /** For tests and custom transports. */
  fetch?: typeof fetch;
  onError?: (err: unknown) => void;
}

export interface CaptureContext {
  extra?: Record<string, unknown>;
  path?: string;
  userId?: string;
}

export interface NodeClient {
  captureException(err: unknown, ctx?: CaptureContext): void;
  captureMessage(message: string, ctx?: CaptureContext): void;
  /** A breadcrumb of the app's own (`{ category, message, level, data }`; the time defaults to now), sent with later errors. */
  addBreadcrumb(crumb: Partial<WireBreadcrumb>): void;
  /** An analytics event (`POST /v1/analytics/i`), batched like errors; a uuid and the time are set here. */
  capture(event: string, distinctId: string, properties?: Record<string, unknown>): void;
  /** Feature flags, evaluated by the service (`GET /v1/flags/i`). */
  readonly flags: FlagsClient;
  /** Send everything queued (errors and analytics); resolves true when both queues are empty (never rejects). */
  flush(timeoutMs?: number): Promise<boolean>;
  /** Events (errors and analytics) dropped because a queue was full or the service refused them for good. */
  readonly dropped: number;
  close(): Promise<void>;
}

/** The edge's limits per request (wire.ts, tied to schemas/limits.ts): a batch the SDK sends is never refused for its size. */
const ERRORS = WIRE_LIMITS.errorBatch;
const ANALYTICS = WIRE_LIMITS.analyticsBatch;
const SEND_AT = 10;
type WireEvent = WireErrorEvent;

export function init(options: NodeClientOptions = {}): NodeClient {
  const env = process.env;
  const ingestKey = options.ingestKey ?? env.SERVICE_INGEST_KEY ?? '';
  const baseUrl = (options.baseUrl ?? env.SERVICE_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
  const deployId = options.deployId ?? env.SERVICE_DEPLOY_ID;
  const gitSha = options.gitSha ?? env.SERVICE_GIT_SHA;
  const maxQueue = options.maxQueue ?? 200;
  const doFetch = options.fetch ?? globalThis.fetch;
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`[service sdk] could not send errors: ${(err as Error)?.message ?? err}\n`));
  const sender = (path: string, maxEvents: number, maxBytes: number) =>
    createBatchSender<WireEvent | WireAnalyticsEvent>({
      url: `${baseUrl}${path}`,
      ingestKey,
      maxEvents,
      maxBytes,
      sendAt: SEND_AT,
      maxQueue,
      flushIntervalMs: options.flushIntervalMs ?? 2_000,
      fetch: doFetch,
      onError,
    });
  const errors = sender(WIRE_PATHS.errors, ERRORS.maxEvents, ERRORS.maxBodyBytes);
  const analytics = sender(WIRE_PATHS.analytics, ANALYTICS.maxEvents, ANALYTICS.maxBodyBytes);
  const flags = createFlagsClient({ baseUrl, ingestKey, fetch: doFetch, deployId, gitSha, onError });
  const enqueue = (e: WireEvent) => {
    // An event past the request limit is never sent: its breadcrumbs go first.
    if (e.breadcrumbs && Buffer.byteLength(JSON.stringify({ batch: [e] })) > ERRORS.maxBodyBytes) delete e.breadcrumbs;
    errors.enqueue(e);
  };
  // The SDK's own requests (errors, analytics, flags) are not breadcrumbs.
  const own = [WIRE_PATHS.errors, WIRE_PATHS.analytics, WIRE_PATHS.flags].map((p) => `${baseUrl}${p}`);
  const crumbs = options.breadcrumbs === false ? undefined : recordBreadcrumbs({ own: (url) => own.some((o) => url.startsWith(o)) });
  const flush = async (timeoutMs = 5_000) => (await Promise.all([errors.flush(timeoutMs), analytics.flush(timeoutMs)])).every(Boolean);

  function base(name: string, message: string, ctx: CaptureContext = {}): WireEvent {
    const e: WireEvent = { name, message, runtime: 'node', timestamp: Date.now() };
    if (deployId) e.deployId = deployId;
    if (gitSha) e.gitSha = gitSha;
    if (ctx.path) e.path = ctx.path;
    if (ctx.userId) e.userId = ctx.userId;
    if (ctx.extra) e.extra = ctx.extra;
    const breadcrumbs = crumbs?.list();
    if (breadcrumbs?.length) e.breadcrumbs = breadcrumbs;
    return e;
  }

  const client: NodeClient = {
    captureException(err, ctx) {
      try {
        const e = err instanceof Error ? err : new Error(typeof err === 'string' ? err : safeJson(err));
        const ev = base(e.name || 'Error', e.message, ctx);
        if (e.stack) ev.stack = e.stack;
        const debugIds = e.stack ? safeDebugIds(e.stack) : undefined;
        if (debugIds) ev.debugIds = debugIds;
        enqueue(ev);
      } catch {
        // never into the application
      }
    },
    captureMessage(message, ctx) {
      try {
        enqueue(base('Message', String(message), ctx));
      } catch {
        // never into the application
      }
    },
    addBreadcrumb(crumb) {
      crumbs?.add(crumb);
    },
    capture(event, distinctId, properties) {
      try {
        const e: WireAnalyticsEvent = { event: String(event), distinctId: String(distinctId), uuid: randomUUID(), timestamp: Date.now() };
        if (properties) e.properties = properties;
        if (deployId) e.deployId = deployId;
        if (gitSha) e.gitSha = gitSha;
        analytics.enqueue(e);
      } catch {
        // never into the application
      }
    },
    flags,
    flush,
    get dropped() {
      return errors.dropped + analytics.dropped;
    },
    async close() {
      crumbs?.close();
      await Promise.all([errors.close(), analytics.close()]);
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
    },
  };

  /** Capture, flush, then end as Node does for an uncaught error: print it, exit code 1. */
  const onUncaught = (err: unknown) => {
    client.captureException(err, { extra: { mechanism: 'uncaught' } });
    void flush(2_000).finally(() => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    });
  };
  if (options.captureUncaught ?? true) {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
  }
  return client;
}

/** The stack as the edge keeps it (its first 8192 characters); a broken `_sentryDebugIds` costs the ids, never the event. */
function safeDebugIds(stack: string): Record<string, string> | undefined {
  try {
    return debugIdsOf(stack.slice(0, 8192));
  } catch {
    return undefined;
  }
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
