import type uWS from 'uWebSockets.js';
import type { Logger } from '../platform/logger.ts';
import type { Platform } from '../platform/platform.ts';
import type { RateDecision, RateHit } from '../platform/ports/rate-limiter.ts';
import type { SiteServer } from '../hosting/serve/site-server.ts';
import { admitBatch, batchRequestHeaders, ingestCredential, type Admitted, type AdmissionRules, type BatchRequestHeaders } from './admission.ts';
import {
  clientIp,
  immediateReply,
  readBody,
  send,
  sendError,
  timedReply,
  watchedReply,
  type AnswerObserver,
  type Headers,
  type ReadBody,
  type ReplyState,
} from './http/uws-reply.ts';
import { originHostOf } from './origin-policy.ts';
import type { EdgeKey, ProjectCache } from './project-cache.ts';
import { refusal, type Refusal, type RefusalCounters } from './refusals.ts';
import { siteKeyOfHost } from './site-key.ts';
import type { KeyUsage } from './key-usage.ts';
import type { RejectedEvent } from '../schemas/api/edge.ts';
import { DISK_FULL_MESSAGE, isDiskFullError } from '../platform/data-dir/disk-space.ts';
import { LIMITS } from '../schemas/limits.ts';
import { edgeBusy, reservations, type BodyBudget } from './http/body-budget.ts';

/**
 * One public batch route of the edge (errors, analytics, the Sentry envelope and store routes, and their site-host forms;
 * schemas/api/edge.ts lists them). A route is four things, each shared as a whole where routes share it: where it is
 * served (`paths`; a site-host form changes only these), what it feeds (`feed`: the cap, rate limits and bus of errors
 * or of analytics, which the Sentry and PostHog routes take over), how its body is read (`format`) and, for callers with
 * SDKs of their own, how it answers them (`dialect`). Everything else is here.
 *
 * Per request, no database I/O:
 *   1-7. admission from the headers (admission.ts)                           401/403/415/413/403/204/429/503
 *   7.   body streamed in, cut off past the limit, while the rate limits run  413 (closed) / 429 rate_limited
 *   8.   parse, validate, stamp (the route's pure function)                   400 invalid_request
 *   9.   one bus message per request; 202 only once the bus holds it          503 unavailable (disk_full: no space for the log)
 * Every request not accepted is counted by reason (refusals.ts), served at the route's health path.
 * A route of several kinds of items (`items`, Sentry's envelopes) is admitted without its cap at 6, read whole at 7,
 * and its own `take` limits each kind it holds (8) before the hand-off (9) of a message per kind's feed.
 */
export interface BatchRoute {
  paths: BatchPaths;
  feed: BatchFeed;
  format: BatchFormat;
  dialect?: BatchDialect;
  /**
   * For bodies of several kinds of items, each kind limited on its own (Sentry's envelopes, ingest/sentry/): admission
   * leaves out the feed's cap, the body is read whole before any rate limit, and `items.take` limits each kind the
   * body holds (the feed's cap and rate limits for its errors), and says what to publish and how to answer.
   */
  items?: ItemsFormat;
}

/** How a route of several kinds of items takes a body (BatchRoute.items). */
export interface ItemsFormat {
  /** The body's items, limited kind by kind: what to publish (every message before the answer) and the answer; or why it is refused whole. */
  take(read: ReadBody, ctx: ItemsContext): Promise<ItemsTaken | Refusal>;
}

export interface ItemsContext extends ParseContext {
  keyId: string;
  ip: string;
  /** The feed's cap for this request (errors: the monthly cap by the Origin's environment). */
  cap(): Refusal | undefined;
  /** The platform's limiter (RateLimiter.hitAll); it may throw when unavailable. */
  hitAll(hits: readonly RateHit[]): Promise<RateDecision[]>;
  /** Reserves bytes of the edge's large-body budget until the request is answered (ingest/http/body-budget.ts); false when they do not fit. */
  reserve(bytes: number): boolean;
}

export interface ItemsTaken {
  /** One call per bus message, each on its own feed: all are made before the answer. */
  publish: Array<() => Promise<void>>;
  events: number;
  dropped?: Record<string, number>;
  reply: { status: number; body: string; headers?: Headers };
}

/** Where a route is served. */
export interface BatchPaths {
  path: string;
  /** More paths served the same way (e.g. without a trailing slash). */
  aliases?: string[];
  /** Whether the path has a parameter (`/api/:projectId/...`): admission reads it as `param`. */
  hasParam?: boolean;
  /** GET: `{ status, settingsLoads, counters }` for operators and load balancers. */
  healthPath?: string;
  /**
   * The same-origin path of a site (§7.1): the Host names the project, whose ingest key the edge attaches;
   * a Host that is no site is 404.
   */
  siteKeyed?: boolean;
}

/** What a route's batches count against and go to: the errors or the analytics of a project. */
export interface BatchFeed {
  cap: AdmissionRules['cap'];
  /** The rate limits one request counts against. */
  rateLimits(keyId: string, ip: string): RateHit[];
  rateLimitedMessage: string;
  publish(message: { key: string; value: Buffer }): Promise<void>;
}

/** How a route reads a request: its size limit, where the key is, the media types it takes, and the body's format. */
export interface BatchFormat {
  maxBodyBytes: number;
  credential?: AdmissionRules['credential'];
  mediaType?: AdmissionRules['mediaType'];
  check?: AdmissionRules['check'];
  /**
   * For callers that name the key inside the body (PostHog's SDKs, ingest/posthog/): the body is read and opened
   * first, then admitted as if it carried the key found (else the request's own credential headers); `parse` gets
   * what was opened as `ctx.opened`, so the body is decoded once.
   */
  open?(read: ReadBody, h: BatchRequestHeaders): { token: string; opened: unknown } | Refusal;
  /**
   * Pure: the body as one bus message value, or why it is refused. `events` may be 0 (nothing to publish, e.g. a
   * Sentry envelope of sessions only); `dropped` counts what the body held that is taken and not kept, by reason.
   * Every route has one but a route of items (BatchRoute.items), which takes its body itself.
   */
  parse?(body: ReadBody, ctx: ParseContext): Parsed | Refusal;
}

/** How a route answers callers whose SDKs read answers of their own shape (Sentry's, PostHog's), and its own 2xx. */
export interface BatchDialect {
  /** The 2xx answer (default 202 `{ ingested }`). */
  acceptedReply?(parsed: Parsed): { status: number; body: string };
  /** Headers added to a refusal (Sentry SDKs read their rate limits from X-Sentry-Rate-Limits). */
  refusalHeaders?(r: Refusal): Headers;
  /** Fields added to a refusal's JSON body beside `error` and `message` (PostHog's SDKs read their own shape). */
  refusalBody?(r: Refusal): Record<string, unknown>;
  /** Request headers a cross-origin caller may send (CORS preflight). */
  corsAllowHeaders?: string;
}

export interface ParseContext {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  hasOrigin: boolean;
  contentEncoding: string;
  /** The request's User-Agent header, '' without one. */
  userAgent: string;
  /** What the route's `format.open` made of the body, when it has one. */
  opened?: unknown;
}

export interface Parsed {
  ok: true;
  events: number;
  value: Buffer;
  /** Ids of the accepted events, when the reply names them (Sentry's `{ id }`). */
  ids?: string[];
  /** Events of the body refused one by one while the rest were taken (analytics), for the reply. */
  rejected?: RejectedEvent[];
  dropped?: Record<string, number>;
}

export interface EdgeContext {
  app: uWS.TemplatedApp;
  platform: Pick<Platform, 'config' | 'limiter' | 'clock' | 'db' | 'disk'>;
  cache: ProjectCache;
  counters: RefusalCounters;
  log: Logger;
  /** Site hosts (platform/sites/): which project a Host serves, for the same-origin path. */
  sites?: SiteServer;
  /** Notes the keys of accepted requests, written out once a minute (key-usage.ts). */
  keyUsage?: KeyUsage;
  /** Told every answer of a route (the latency histogram of /metrics). */
  observe?: AnswerObserver;
  /** Bytes of large bodies held at once by the routes of items (ingest/http/body-budget.ts). */
  bodyBudget: BodyBudget;
}

const DEFAULT_CORS_ALLOW_HEADERS = 'content-type, authorization, x-service-analytics-key';
/** What a cross-origin caller may read of an answer: when to retry. */
const CORS_EXPOSE: [string, string] = ['Access-Control-Expose-Headers', 'Retry-After, X-Sentry-Rate-Limits'];

/**
 * The server-held ingest key of a Node app that relays its pages' errors (sdk/node/forwarder.ts) names the
 * browser's IP here, so the per key-and-IP limit counts browsers, not the relaying server. Browsers cannot send it
 * cross-origin (the preflight does not allow it), and a caller holding a key could spread its own IPs anyway; the
 * per-key limit binds either way.
 */
export const CLIENT_IP_HEADER = 'x-service-client-ip';

export function registerBatchRoute(edge: EdgeContext, route: BatchRoute): void {
  const { app, platform, cache, counters, log } = edge;
  const { config, limiter, clock } = platform;
  const { paths, feed, format, dialect = {} } = route;
  if (!format.parse && !route.items) throw new Error(`route ${paths.path} has neither a parse nor items`);
  const rules: AdmissionRules = {
    cache,
    widgetHosts: config.WIDGET_HOSTS,
    maxBodyBytes: format.maxBodyBytes,
    cap: feed.cap,
    credential: format.credential,
    mediaType: format.mediaType,
    check: format.check,
    diskLow: () => platform.disk.low,
  };
  const preflight: Headers = [
    ['Access-Control-Allow-Methods', 'POST'],
    ['Access-Control-Allow-Headers', dialect.corsAllowHeaders ?? DEFAULT_CORS_ALLOW_HEADERS],
    ['Access-Control-Max-Age', '600'],
  ];
  // A route of items (BatchRoute.items) applies the feed's cap itself, to the items it concerns.
  const itemRules: AdmissionRules = { ...rules, cap: () => undefined };
  const tooLarge = refusal('too_large', `body exceeds ${format.maxBodyBytes} bytes`);

  if (paths.healthPath) {
    app.get(paths.healthPath, (res) => {
      send(
        res,
        immediateReply(),
        200,
        [
          ['Content-Type', 'application/json'],
          ['Cache-Control', 'no-store'],
        ],
        JSON.stringify({ status: 'ok', settingsLoads: cache.loads, counters: counters.counts }),
      );
    });
  }

  for (const path of [paths.path, ...(paths.aliases ?? [])]) {
    app.options(path, (res, req) => {
      const origin = req.getHeader('origin');
      // A preflight carries no key, so the project (and its origin list) is unknown here: the POST
      // itself enforces §7.3 and answers 403 origin_not_allowed without CORS headers.
      const headers: Headers =
        origin && originHostOf(origin) ? [['Access-Control-Allow-Origin', origin], ['Vary', 'Origin'], ...preflight] : [['Vary', 'Origin']];
      send(res, immediateReply(), 204, headers);
    });
    app.post(path, paths.siteKeyed ? postToSite : format.open ? postOpened : route.items ? postItems : post);
    app.any(path, (res, req) => {
      sendError(res, immediateReply(req), 'method_not_allowed', 'use POST', [['Allow', 'POST, OPTIONS']]);
    });
  }

  function corsOf(origin: string): Headers {
    return origin ? [['Access-Control-Allow-Origin', origin], ['Vary', 'Origin'], CORS_EXPOSE] : [];
  }

  function refuse(res: uWS.HttpResponse, st: ReplyState, r: Refusal, cors: Headers): void {
    // A refusal that names its own headers (a route of items, BatchRoute.items) has them in place of the dialect's.
    const headers = r.headers ?? dialect.refusalHeaders?.(r);
    counters.refuse(res, st, dialect.refusalBody ? { ...r, body: dialect.refusalBody(r) } : r, headers ? [...cors, ...headers] : cors);
  }

  function callerIp(res: uWS.HttpResponse, req: uWS.HttpRequest, relayed: boolean): string {
    if (relayed) {
      const named = req.getHeader(CLIENT_IP_HEADER).trim();
      if (named && named.length <= 64) return named;
    }
    return clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY);
  }

  function post(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const st = timedReply(watchedReply(res), paths.path, edge.observe);
    const h = batchRequestHeaders(req, paths.hasParam);
    const cors = corsOf(h.origin);

    // 1-6. admission
    const admitted = admitBatch(h, rules);
    if (!('ok' in admitted)) return refuse(res, st, admitted, cors);

    // 7. body and rate limits, concurrently (everything needed later is copied now: `req` dies at the first await)
    const ip = callerIp(res, req, true);
    const body = readBody(res, st, format.maxBodyBytes, () => refuse(res, st, tooLarge, cors), admitted.declaredLength);
    const limits = limiter.hitAll(feed.rateLimits(admitted.key.keyId, ip));
    guarded(res, st, cors, accept(res, st, body, limits, admitted, h, cors));
  }

  /**
   * A body of several kinds of items (BatchRoute.items): admitted without the feed's cap, read whole, then taken
   * kind by kind (each kind's rate limits, the feed's cap for its errors) by the route.
   */
  function postItems(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    const st = timedReply(watchedReply(res), paths.path, edge.observe);
    const h = batchRequestHeaders(req, paths.hasParam);
    const cors = corsOf(h.origin);
    const admitted = admitBatch(h, itemRules);
    if (!('ok' in admitted)) return refuse(res, st, admitted, cors);
    // A large body (or one of unknown length, which may grow to the limit) is held within the edge's budget.
    const held = reservations(edge.bodyBudget);
    const size = h.contentLength === '' ? format.maxBodyBytes : admitted.declaredLength;
    if (size > LIMITS.largeBodies.freeBytes && !held.take(size)) return refuse(res, st, edgeBusy(), cors);
    const ip = callerIp(res, req, true);
    const body = readBody(res, st, format.maxBodyBytes, () => refuse(res, st, tooLarge, cors), admitted.declaredLength);
    guarded(res, st, cors, takeItems(res, st, body, admitted, h, ip, cors, held.take).finally(held.release));
  }

  async function takeItems(
    res: uWS.HttpResponse,
    st: ReplyState,
    bodyP: Promise<ReadBody | null>,
    admitted: Admitted,
    h: BatchRequestHeaders,
    ip: string,
    cors: Headers,
    reserve: (bytes: number) => boolean,
  ): Promise<void> {
    const read = await bodyP;
    if (read === null || st.done || st.aborted) return;
    const project = admitted.key.project;
    const taken = await route.items!.take(read, {
      projectId: project.id,
      originHost: admitted.originHost,
      receivedAt: clock.now(),
      hasOrigin: h.origin !== '',
      contentEncoding: h.contentEncoding,
      userAgent: h.userAgent,
      keyId: admitted.key.keyId,
      ip,
      cap: () => feed.cap(project, { present: h.origin !== '', host: admitted.originHost }),
      hitAll: (hits) => limiter.hitAll(hits),
      reserve,
    });
    if (st.done || st.aborted) return;
    if ('reason' in taken) return refuse(res, st, taken, cors);
    const failed = await handOff(taken.publish);
    if (failed) return refuse(res, st, failed, cors);
    counters.accepted(taken.events, taken.dropped);
    edge.keyUsage?.used(admitted.key.keyId);
    send(res, st, taken.reply.status, [['Content-Type', 'application/json'], ...cors, ...(taken.reply.headers ?? [])], taken.reply.body);
  }

  /** Publishes every message of a request; a failure is the refusal to answer (503: the bus, or its disk). */
  async function handOff(publishes: Array<() => Promise<void>>): Promise<Refusal | undefined> {
    try {
      await Promise.all(publishes.map((p) => p()));
      return undefined;
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'bus publish failed; answering 503');
      // Out of space for the bus's log: the watch turns low at once, so the next batches are refused at admission.
      if (platform.disk.noteError(err) || isDiskFullError(err)) return refusal('disk_full', DISK_FULL_MESSAGE);
      return refusal('bus_unavailable', 'ingest is temporarily unavailable, retry later');
    }
  }

  /** A step that threw (our bug) answers 500, is counted as `internal`, and never reaches the process. */
  function guarded(res: uWS.HttpResponse, st: ReplyState, cors: Headers, work: Promise<void>): void {
    work.catch((err) => {
      log.error({ err }, 'batch route failed');
      refuse(res, st, refusal('internal', 'internal error'), cors);
    });
  }

  /**
   * A request whose admission waits on something (the site of its Host, the key inside its body): the body streams
   * in at once, within the limit, and `then` admits and accepts it.
   */
  function admitLater(
    res: uWS.HttpResponse,
    req: uWS.HttpRequest,
    relayed: boolean,
    then: (r: { st: ReplyState; h: BatchRequestHeaders; cors: Headers; ip: string; body: Promise<ReadBody | null> }) => Promise<void>,
  ): void {
    const st = timedReply(watchedReply(res), paths.path, edge.observe);
    const h = batchRequestHeaders(req, paths.hasParam);
    const cors = corsOf(h.origin);
    const ip = callerIp(res, req, relayed);
    const declared = Number(h.contentLength) || 0;
    if (declared > format.maxBodyBytes) return refuse(res, st, tooLarge, cors);
    const body = readBody(res, st, format.maxBodyBytes, () => refuse(res, st, tooLarge, cors), declared);
    guarded(res, st, cors, then({ st, h, cors, ip, body }));
  }

  /**
   * The same-origin path: the Host is resolved to its site's project (platform/sites/, cached) while the body
   * streams in, then the request is admitted as if it carried the project's ingest key, and goes on as any other.
   */
  function postToSite(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    admitLater(res, req, false, async ({ st, h, cors, ip, body }) => {
      let siteKey: EdgeKey | Refusal;
      try {
        siteKey = await siteKeyOfHost(edge.sites, cache, h.host, ip);
      } catch (err) {
        await body;
        log.error({ err }, 'site lookup failed');
        return refuse(res, st, refusal('limiter_unavailable', 'ingest is temporarily unavailable, retry later'), cors);
      }
      if ('reason' in siteKey) {
        await body;
        return refuse(res, st, siteKey, cors);
      }
      const admitted = admitBatch(h, rules, siteKey);
      if (!('ok' in admitted)) {
        await body;
        return refuse(res, st, admitted, cors);
      }
      await accept(res, st, body, limiter.hitAll(feed.rateLimits(admitted.key.keyId, ip)), admitted, h, cors);
    });
  }

  /**
   * The key is inside the body (route.format.open): the body is read whole (within the limit) and opened, then the
   * request is admitted with the key found and goes on as any other.
   */
  function postOpened(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    admitLater(res, req, true, async ({ st, h, cors, ip, body }) => {
      const read = await body;
      if (read === null || st.done || st.aborted) return;
      const opened = format.open!(read, h);
      if ('reason' in opened) return refuse(res, st, opened, cors);
      const admitted = admitBatch(h, { ...rules, credential: (headers) => opened.token || ingestCredential(headers) });
      if (!('ok' in admitted)) return refuse(res, st, admitted, cors);
      await accept(res, st, Promise.resolve(read), limiter.hitAll(feed.rateLimits(admitted.key.keyId, ip)), admitted, h, cors, opened.opened);
    });
  }

  async function accept(
    res: uWS.HttpResponse,
    st: ReplyState,
    bodyP: Promise<ReadBody | null>,
    limitsP: Promise<Array<{ allowed: boolean; retryAfterSec: number }>>,
    admitted: Admitted,
    h: BatchRequestHeaders,
    cors: Headers,
    opened?: unknown,
  ): Promise<void> {
    let decisions: Array<{ allowed: boolean; retryAfterSec: number }>;
    try {
      decisions = await limitsP;
    } catch (err) {
      await bodyP;
      log.error({ err }, 'rate limiter unavailable');
      return refuse(res, st, refusal('limiter_unavailable', 'ingest is temporarily unavailable, retry later'), cors);
    }
    const read = await bodyP;
    if (read === null || st.done || st.aborted) return;
    const refused = decisions.filter((d) => !d.allowed);
    if (refused.length) {
      return refuse(res, st, refusal('rate_limited', feed.rateLimitedMessage, { retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)) }), cors);
    }

    // 8. validate and stamp
    const projectId = admitted.key.project.id;
    const outcome = format.parse!(read, {
      projectId,
      originHost: admitted.originHost,
      receivedAt: clock.now(),
      hasOrigin: h.origin !== '',
      contentEncoding: h.contentEncoding,
      userAgent: h.userAgent,
      opened,
    });
    if (!('ok' in outcome)) return refuse(res, st, outcome, cors);

    // 9. hand off: one message per request, the 2xx only after the bus holds it
    if (outcome.events > 0) {
      const failed = await handOff([() => feed.publish({ key: projectId, value: outcome.value })]);
      if (failed) return refuse(res, st, failed, cors);
    }
    counters.accepted(outcome.events, outcome.dropped);
    edge.keyUsage?.used(admitted.key.keyId);
    const reply = dialect.acceptedReply ? dialect.acceptedReply(outcome) : { status: 202, body: `{"ingested":${outcome.events}}` };
    send(res, st, reply.status, [['Content-Type', 'application/json'], ...cors], reply.body);
  }
}
