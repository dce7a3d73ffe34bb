import uWS from 'uWebSockets.js';
import { STATUS_CODES } from 'node:http';
import type { Platform } from '../platform/platform.ts';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../schemas/error-codes.ts';
import { ENVELOPE_HEAD_ROOM, type EnvelopeRoom } from '../schemas/error-event.ts';
import { LIMITS } from '../schemas/limits.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { TOPICS } from '../schemas/topics.ts';
import { parseErrorBatch } from './error-batch.ts';
import { createCoalescingPublisher } from './coalescing-publisher.ts';
import type { ForwardRequest, ForwardResponse } from './forward.ts';
import { environmentOfHost, matchesAny } from '../platform/host-patterns.ts';
import { originHostOf } from './origin-policy.ts';
import { secondsToMonthEnd, startProjectCache, type EdgeKey } from './project-cache.ts';

/**
 * The ingest edge (uWebSockets.js): `POST /v1/errors/i`.
 *
 * Per request, in order, and no database I/O (keys, settings and cap state come from the
 * in-memory project cache):
 *   1. credential: an ingest key (Bearer or x-service-analytics-key)      401 / 403
 *   2. Content-Type application/json                                       415
 *   3. declared Content-Length within 64 KB                                413 (connection closed)
 *   4. Origin allowed for the project (§7.3)                               403 origin_not_allowed
 *   5. paused project                                                      204, nothing published
 *   6. monthly cap of the environment the Origin implies (§7.5)            429 errors_capped
 *   7. body streamed in, cut off past 64 KB, while the rate limits run     413 (closed) / 429 rate_limited
 *   8. parse, validate, truncate, stamp                                    400 invalid_request
 *   9. one bus message per request (sends coalesced, see coalescing-publisher.ts); 202 only once
 *      the bus holds it                                                     503 unavailable
 * Every request not accepted is counted with a snake_case reason (served at GET /v1/errors/i/health).
 *
 * uWS rules kept here: a response is touched only while not aborted, every write after an await is
 * corked, request headers are copied before any await (HttpRequest dies with the handler's stack).
 */
export interface IngestServerOptions {
  port: number;
  host?: string;
  /** Single-process mode: relay every other request (e.g. to Fastify's app.inject). */
  forward?: (req: ForwardRequest) => Promise<ForwardResponse>;
  /**
   * How accepted batches reach the bus: `coalesced` (default) groups the messages of concurrent
   * requests into one send; `per-request` sends each alone. Only the benchmark sets it, to measure
   * the difference in one run.
   */
  publishMode?: 'coalesced' | 'per-request';
  /** Defaults to TOPICS.errorEvents; tests sharing one Kafka cluster use a topic of their own. */
  topic?: string;
}

export interface IngestServer {
  port: number;
  close(): Promise<void>;
  stats(): Record<string, number>;
}

export const ERRORS_INGEST_PATH = '/v1/errors/i';
export const ERRORS_INGEST_HEALTH_PATH = '/v1/errors/i/health';
/** Largest body relayed to the API in single-process mode. */
const FORWARD_MAX_BODY_BYTES = 1024 * 1024;
/** Retry-After when the bus cannot take a batch (or the shared limiter is unreachable). */
const UNAVAILABLE_RETRY_AFTER_SEC = 5;
const MINUTE_MS = 60_000;

export const REJECT_REASONS = [
  'unauthorized',
  'forbidden_credential',
  'unsupported_media_type',
  'too_large',
  'invalid_request',
  'origin_not_allowed',
  'rate_limited',
  'capped',
  'paused',
  'bus_unavailable',
  'limiter_unavailable',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** Credentials of ours that are not ingest keys: a 403, not a 401 (the caller is known, the route is not theirs). */
const OTHER_CREDENTIAL_PREFIXES = [
  TOKEN_PREFIX.liveKey,
  TOKEN_PREFIX.testKey,
  TOKEN_PREFIX.cliToken,
  TOKEN_PREFIX.deployHook,
  TOKEN_PREFIX.session,
  'cxm_',
];

const CORS_PREFLIGHT_HEADERS: Array<[string, string]> = [
  ['Access-Control-Allow-Methods', 'POST'],
  ['Access-Control-Allow-Headers', 'content-type, authorization, x-service-analytics-key'],
  ['Access-Control-Max-Age', '600'],
];

type Headers = Array<[string, string]>;

interface ReplyState {
  aborted: boolean;
  /** Answered: nothing more may be written. */
  done: boolean;
  /** Set while a body is being read, so an abort settles the read. */
  onAbortRead?: () => void;
}

const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    statusLines.set(status, line);
  }
  return line;
}

function send(res: uWS.HttpResponse, st: ReplyState, status: number, headers: Headers, body?: string | Buffer, close = false): void {
  if (st.aborted || st.done) return;
  st.done = true;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [k, v] of headers) res.writeHeader(k, v);
    if (body === undefined) res.endWithoutBody(0, close);
    else res.end(body, close);
  });
}

function sendError(
  res: uWS.HttpResponse,
  st: ReplyState,
  code: ErrorCode,
  message: string,
  headers: Headers = [],
  extra: { retryAfterSec?: number; fields?: ErrorBody['fields']; close?: boolean } = {},
): void {
  const body: ErrorBody = { error: code, message };
  if (extra.fields) body.fields = extra.fields;
  const h: Headers = [['Content-Type', 'application/json'], ...headers];
  if (extra.retryAfterSec !== undefined) h.push(['Retry-After', String(extra.retryAfterSec)]);
  send(res, st, ERROR_CODES[code], h, JSON.stringify(body), extra.close);
}

/**
 * Read the body as it streams in, refusing it (413, connection closed) the moment it passes `max`,
 * so a huge body is never read to its end. Resolves null when the request was answered or aborted.
 *
 * With a declared length (`room`), the body is read straight into one buffer with ENVELOPE_HEAD_ROOM
 * bytes before it and one after, so the bus envelope is written around it without another copy.
 */
function readBody(
  res: uWS.HttpResponse,
  st: ReplyState,
  max: number,
  onTooLarge: () => void,
  declaredLength = 0,
): Promise<{ body: Buffer; room?: EnvelopeRoom } | null> {
  return new Promise((resolve) => {
    // uWS keeps the onData handler (and all it captures) until the connection's next request, often long
    // enough to be promoted to V8's old space: so the request's buffers and promise are reached only through
    // `r`, which is dropped once the body is settled, and they die young.
    let r: BodyRead | undefined = { resolve, chunks: [], total: 0, inRoom: 0, room: undefined };
    const settle = (value: { body: Buffer; room?: EnvelopeRoom } | null) => {
      const done = r?.resolve;
      r = undefined;
      st.onAbortRead = undefined;
      done?.(value);
    };
    st.onAbortRead = () => settle(null);
    res.onData((chunk, isLast) => {
      if (!r || st.done || st.aborted) return;
      const size = chunk.byteLength;
      if (r.total + size > max) {
        onTooLarge();
        settle(null);
        return;
      }
      // Allocated with the first bytes of the body, not on the headers alone: a client that declares 64 KB
      // and sends nothing holds no buffer.
      if (r.total === 0 && declaredLength > 0 && declaredLength <= max) r.room = { buf: Buffer.allocUnsafe(ENVELOPE_HEAD_ROOM + declaredLength + 1), start: ENVELOPE_HEAD_ROOM };
      const room = r.room;
      // uWS neuters the ArrayBuffer when this callback returns: copy it.
      if (room && !r.chunks.length && r.inRoom + size <= declaredLength) {
        room.buf.set(new Uint8Array(chunk), room.start + r.inRoom);
        r.inRoom += size;
      } else r.chunks.push(Buffer.from(new Uint8Array(chunk)));
      r.total += size;
      if (!isLast) return;
      const { chunks, total, inRoom } = r;
      if (room && !chunks.length) return settle({ body: room.buf.subarray(room.start, room.start + total), room });
      // No declared length, or a body that did not match it: one buffer of what arrived.
      const read = room && inRoom ? [room.buf.subarray(room.start, room.start + inRoom), ...chunks] : chunks;
      settle({ body: read.length === 1 ? read[0]! : Buffer.concat(read, total) });
    });
  });
}

/** A body being read: what the onData handler must not keep once the body is settled. */
interface BodyRead {
  resolve: (value: { body: Buffer; room?: EnvelopeRoom } | null) => void;
  chunks: Buffer[];
  total: number;
  inRoom: number;
  room: EnvelopeRoom | undefined;
}

function bearer(authorization: string): string {
  if (authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ') return authorization.slice(7).trim();
  return '';
}

function clientIp(res: uWS.HttpResponse, forwardedFor: string, trustProxy: boolean): string {
  if (trustProxy && forwardedFor) {
    // The right-most entry is the one our own proxy appended; entries left of it are client-supplied.
    const parts = forwardedFor.split(',');
    const ip = parts[parts.length - 1].trim();
    if (ip) return ip;
  }
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

export async function startIngestServer(platform: Platform, opts: IngestServerOptions): Promise<IngestServer> {
  const log = platform.logger.child({ component: 'ingest' });
  const cache = await startProjectCache(platform);
  const { config, bus, limiter, clock } = platform;
  const widgetHosts = config.WIDGET_HOSTS;
  const rate = LIMITS.errorIngestRate;
  const maxBody = LIMITS.errorBatch.maxBodyBytes;
  const topic = opts.topic ?? TOPICS.errorEvents;
  const publisher =
    opts.publishMode === 'per-request'
      ? { publish: (m: { key?: string; value: Buffer }) => bus.publish(topic, [m]) }
      : createCoalescingPublisher(bus, topic);

  const counters: Record<string, number> = { accepted_events: 0, accepted_batches: 0 };
  for (const r of REJECT_REASONS) counters[r] = 0;
  const reject = (r: RejectReason) => {
    counters[r]++;
  };

  const app = uWS.App();

  app.options(ERRORS_INGEST_PATH, (res, req) => {
    const origin = req.getHeader('origin');
    const st: ReplyState = { aborted: false, done: false };
    // A preflight carries no key, so the project (and its origin list) is unknown here: the POST
    // itself enforces §7.3 and answers 403 origin_not_allowed without CORS headers.
    const headers: Headers = origin && originHostOf(origin) ? [['Access-Control-Allow-Origin', origin], ['Vary', 'Origin'], ...CORS_PREFLIGHT_HEADERS] : [['Vary', 'Origin']];
    send(res, st, 204, headers);
  });

  app.get(ERRORS_INGEST_HEALTH_PATH, (res) => {
    const st: ReplyState = { aborted: false, done: false };
    send(res, st, 200, [['Content-Type', 'application/json'], ['Cache-Control', 'no-store']], JSON.stringify({ status: 'ok', settingsLoads: cache.loads, counters }));
  });

  app.post(ERRORS_INGEST_PATH, (res, req) => {
    const st: ReplyState = { aborted: false, done: false };
    res.onAborted(() => {
      st.aborted = true;
      st.onAbortRead?.();
    });

    // 1. credential
    const authorization = req.getHeader('authorization');
    const token = (authorization && bearer(authorization)) || req.getHeader('x-service-analytics-key').trim();
    const origin = req.getHeader('origin');
    const cors: Headers = origin ? [['Access-Control-Allow-Origin', origin], ['Vary', 'Origin']] : [];
    if (!token) {
      reject('unauthorized');
      return sendError(res, st, 'unauthorized', 'an ingest key is required (Authorization: Bearer cak_live_... or x-service-analytics-key)', cors);
    }
    if (!token.startsWith(TOKEN_PREFIX.ingestKey)) {
      if (OTHER_CREDENTIAL_PREFIXES.some((p) => token.startsWith(p))) {
        reject('forbidden_credential');
        return sendError(res, st, 'forbidden', 'only an ingest key (cak_live_) may post to this route', cors);
      }
      reject('unauthorized');
      return sendError(res, st, 'unauthorized', 'unknown or revoked ingest key', cors);
    }
    const key: EdgeKey | undefined = cache.byToken(token);
    if (!key) {
      reject('unauthorized');
      return sendError(res, st, 'unauthorized', 'unknown or revoked ingest key', cors);
    }
    const project = key.project;

    // 2. media type
    const contentType = req.getHeader('content-type');
    const semi = contentType.indexOf(';');
    if ((semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() !== 'application/json') {
      reject('unsupported_media_type');
      return sendError(res, st, 'unsupported_media_type', 'Content-Type must be application/json', cors);
    }

    // 3. declared size
    const declaredLength = Number(req.getHeader('content-length')) || 0;
    if (declaredLength > maxBody) {
      reject('too_large');
      return sendError(res, st, 'payload_too_large', `body exceeds ${maxBody} bytes`, cors, { close: true });
    }

    // 4. origin (§7.3)
    let originHost: string | null = null;
    if (origin) {
      originHost = originHostOf(origin);
      const allowed =
        project.ingestOrigins.length === 0 ||
        (originHost !== null &&
          (matchesAny(originHost, project.productionDomains) ||
            matchesAny(originHost, project.previewDomains) ||
            matchesAny(originHost, widgetHosts) ||
            matchesAny(originHost, project.ingestOrigins)));
      if (!allowed) {
        reject('origin_not_allowed');
        return sendError(res, st, 'origin_not_allowed', `origin ${originHost ?? origin} may not post errors to this project`);
      }
    }

    // 5. paused
    if (project.paused) {
      reject('paused');
      return send(res, st, 204, cors);
    }

    // 6. monthly caps: the edge knows the environment only from the Origin (a host off the project's
    // domains is `unknown`); without one it refuses only when every environment the processor could
    // stamp is capped (the processor enforces caps exactly).
    const c = project.capped;
    const capped = origin ? c[(originHost && environmentOfHost(project, originHost)) || 'unknown'] : c.production && c.preview && c.unknown;
    if (capped) {
      reject('capped');
      return sendError(res, st, 'errors_capped', 'this project is over its monthly error cap', cors, { retryAfterSec: secondsToMonthEnd(clock.now()) });
    }

    // Everything needed later is copied now: `req` is invalid after the first await.
    const ip = clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY);
    const keyId = key.keyId;
    const projectId = project.id;
    const defaultRuntime = origin ? 'browser' : 'node';

    // 7. body and rate limits, concurrently
    const body = readBody(
      res,
      st,
      maxBody,
      () => {
        reject('too_large');
        sendError(res, st, 'payload_too_large', `body exceeds ${maxBody} bytes`, cors, { close: true });
      },
      declaredLength,
    );
    const limits = limiter.hitAll([
      { key: `errors:ki:${keyId}:${ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
      { key: `errors:k:${keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
    ]);
    void handleBody(res, st, body, limits, { projectId, originHost, defaultRuntime, cors });
  });

  async function handleBody(
    res: uWS.HttpResponse,
    st: ReplyState,
    bodyP: Promise<{ body: Buffer; room?: EnvelopeRoom } | null>,
    limitsP: Promise<Array<{ allowed: boolean; retryAfterSec: number }>>,
    ctx: { projectId: string; originHost: string | null; defaultRuntime: 'browser' | 'node'; cors: Headers },
  ): Promise<void> {
    let decisions: Array<{ allowed: boolean; retryAfterSec: number }>;
    try {
      decisions = await limitsP;
    } catch (err) {
      await bodyP;
      log.error({ err }, 'rate limiter unavailable');
      reject('limiter_unavailable');
      return sendError(res, st, 'unavailable', 'ingest is temporarily unavailable, retry later', ctx.cors, { retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC });
    }
    const read = await bodyP;
    if (read === null || st.done || st.aborted) return;
    const refused = decisions.filter((d) => !d.allowed);
    if (refused.length) {
      reject('rate_limited');
      const retryAfterSec = Math.max(1, ...refused.map((d) => d.retryAfterSec));
      return sendError(res, st, 'rate_limited', 'too many requests for this ingest key', ctx.cors, { retryAfterSec });
    }

    // 8. validate and stamp
    const outcome = parseErrorBatch(read.body, { projectId: ctx.projectId, originHost: ctx.originHost, receivedAt: clock.now(), defaultRuntime: ctx.defaultRuntime }, read.room);
    if (!outcome.ok) {
      reject('invalid_request');
      return sendError(res, st, 'invalid_request', outcome.message, ctx.cors, { fields: outcome.fields });
    }

    // 9. hand off: one message per request, the 202 only after the bus holds it
    const n = outcome.events;
    try {
      await publisher.publish({ key: ctx.projectId, value: outcome.value });
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'bus publish failed; answering 503');
      reject('bus_unavailable');
      return sendError(res, st, 'unavailable', 'ingest is temporarily unavailable, retry later', ctx.cors, { retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC });
    }
    counters.accepted_batches++;
    counters.accepted_events += n;
    send(res, st, 202, [['Content-Type', 'application/json'], ...ctx.cors], `{"ingested":${n}}`);
  }

  app.any(ERRORS_INGEST_PATH, (res) => {
    sendError(res, { aborted: false, done: false }, 'method_not_allowed', 'use POST', [['Allow', 'POST, OPTIONS']]);
  });

  app.any('/*', (res, req) => {
    const st: ReplyState = { aborted: false, done: false };
    if (!opts.forward) return sendError(res, st, 'not_found', 'no such route');
    res.onAborted(() => {
      st.aborted = true;
      st.onAbortRead?.();
    });
    const forward = opts.forward;
    const method = req.getCaseSensitiveMethod();
    const query = req.getQuery();
    const url = query ? `${req.getUrl()}?${query}` : req.getUrl();
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    });
    const remoteAddress = clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY);
    if (headers['content-length'] && Number(headers['content-length']) > FORWARD_MAX_BODY_BYTES) {
      return sendError(res, st, 'payload_too_large', `body exceeds ${FORWARD_MAX_BODY_BYTES} bytes`, [], { close: true });
    }
    const bodyP = readBody(res, st, FORWARD_MAX_BODY_BYTES, () =>
      sendError(res, st, 'payload_too_large', `body exceeds ${FORWARD_MAX_BODY_BYTES} bytes`, [], { close: true }),
    );
    void (async () => {
      const read = await bodyP;
      if (read === null || st.done || st.aborted) return;
      const body = read.body;
      let out: ForwardResponse;
      try {
        out = await forward({ method, url, headers, body, remoteAddress });
      } catch (err) {
        log.error({ err }, 'forwarded request failed');
        return sendError(res, st, 'internal', 'internal error');
      }
      const h: Headers = [];
      for (const [k, v] of Object.entries(out.headers)) {
        if (v === undefined) continue;
        const lk = k.toLowerCase();
        // uWS frames the response itself.
        if (lk === 'content-length' || lk === 'transfer-encoding' || lk === 'connection' || lk === 'keep-alive') continue;
        if (Array.isArray(v)) for (const one of v) h.push([k, one]);
        else h.push([k, String(v)]);
      }
      send(res, st, out.status, h, out.body);
    })();
  });

  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(opts.host ?? '0.0.0.0', opts.port, (ls) => (ls ? resolve(ls) : reject(new Error(`ingest edge could not listen on ${opts.host ?? '0.0.0.0'}:${opts.port}`))));
  }).catch((err) => {
    cache.stop();
    throw err;
  });
  const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
  log.info({ port }, 'ingest edge listening');

  return {
    port,
    async close() {
      cache.stop();
      uWS.us_listen_socket_close(listenSocket);
    },
    stats: () => ({ ...counters }),
  };
}
