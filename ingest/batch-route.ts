import type uWS from 'uWebSockets.js';
import type { Logger } from '../platform/logger.ts';
import type { Platform } from '../platform/platform.ts';
import type { RateHit } from '../platform/ports/rate-limiter.ts';
import { admitBatch, batchRequestHeaders, type Admitted, type AdmissionRules } from './admission.ts';
import { clientIp, immediateReply, readBody, send, sendError, watchedReply, type Headers, type ReadBody, type ReplyState } from './http/uws-reply.ts';
import { originHostOf } from './origin-policy.ts';
import type { ProjectCache } from './project-cache.ts';
import { refusal, type Refusal, type RefusalCounters } from './refusals.ts';

/**
 * One public batch route of the edge (`POST /v1/errors/i`, and the routes to come): a route names its
 * path, limits, cap, how a body becomes one bus message, and where it goes; everything else is here.
 *
 * Per request, no database I/O:
 *   1-6. admission from the headers (admission.ts)                           401/403/415/413/403/204/429
 *   7.   body streamed in, cut off past the limit, while the rate limits run  413 (closed) / 429 rate_limited
 *   8.   parse, validate, stamp (the route's pure function)                   400 invalid_request
 *   9.   one bus message per request; 202 only once the bus holds it          503 unavailable
 * Every request not accepted is counted by reason (refusals.ts), served at the route's health path.
 */
export interface BatchRoute {
  path: string;
  /** GET: `{ status, settingsLoads, counters }` for operators and load balancers. */
  healthPath: string;
  maxBodyBytes: number;
  cap: AdmissionRules['cap'];
  /** The rate limits one request counts against. */
  rateLimits(keyId: string, ip: string): RateHit[];
  rateLimitedMessage: string;
  /** Pure: the body as one bus message value, or why it is refused. */
  parse(body: ReadBody, ctx: { projectId: string; originHost: string | null; receivedAt: number; hasOrigin: boolean }): { ok: true; events: number; value: Buffer } | Refusal;
  publish(message: { key: string; value: Buffer }): Promise<void>;
}

export interface EdgeContext {
  app: uWS.TemplatedApp;
  platform: Platform;
  cache: ProjectCache;
  counters: RefusalCounters;
  log: Logger;
}

const CORS_PREFLIGHT_HEADERS: Headers = [
  ['Access-Control-Allow-Methods', 'POST'],
  ['Access-Control-Allow-Headers', 'content-type, authorization, x-service-analytics-key'],
  ['Access-Control-Max-Age', '600'],
];

export function registerBatchRoute(edge: EdgeContext, route: BatchRoute): void {
  const { app, platform, cache, counters, log } = edge;
  const { config, limiter, clock } = platform;
  const rules: AdmissionRules = { cache, widgetHosts: config.WIDGET_HOSTS, maxBodyBytes: route.maxBodyBytes, cap: route.cap };

  app.options(route.path, (res, req) => {
    const origin = req.getHeader('origin');
    // A preflight carries no key, so the project (and its origin list) is unknown here: the POST
    // itself enforces §7.3 and answers 403 origin_not_allowed without CORS headers.
    const headers: Headers = origin && originHostOf(origin) ? [['Access-Control-Allow-Origin', origin], ['Vary', 'Origin'], ...CORS_PREFLIGHT_HEADERS] : [['Vary', 'Origin']];
    send(res, immediateReply(), 204, headers);
  });

  app.get(route.healthPath, (res) => {
    send(res, immediateReply(), 200, [['Content-Type', 'application/json'], ['Cache-Control', 'no-store']], JSON.stringify({ status: 'ok', settingsLoads: cache.loads, counters: counters.counts }));
  });

  app.post(route.path, (res, req) => {
    const st = watchedReply(res);
    const h = batchRequestHeaders(req);
    const cors: Headers = h.origin ? [['Access-Control-Allow-Origin', h.origin], ['Vary', 'Origin']] : [];

    // 1-6. admission
    const admitted = admitBatch(h, rules);
    if (!('ok' in admitted)) return counters.refuse(res, st, admitted, cors);

    // 7. body and rate limits, concurrently (everything needed later is copied now: `req` dies at the first await)
    const ip = clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY);
    const body = readBody(res, st, route.maxBodyBytes, () => counters.refuse(res, st, refusal('too_large', `body exceeds ${route.maxBodyBytes} bytes`), cors), admitted.declaredLength);
    const limits = limiter.hitAll(route.rateLimits(admitted.key.keyId, ip));
    void accept(res, st, body, limits, admitted, h.origin !== '', cors);
  });

  async function accept(
    res: uWS.HttpResponse,
    st: ReplyState,
    bodyP: Promise<ReadBody | null>,
    limitsP: Promise<Array<{ allowed: boolean; retryAfterSec: number }>>,
    admitted: Admitted,
    hasOrigin: boolean,
    cors: Headers,
  ): Promise<void> {
    let decisions: Array<{ allowed: boolean; retryAfterSec: number }>;
    try {
      decisions = await limitsP;
    } catch (err) {
      await bodyP;
      log.error({ err }, 'rate limiter unavailable');
      return counters.refuse(res, st, refusal('limiter_unavailable', 'ingest is temporarily unavailable, retry later'), cors);
    }
    const read = await bodyP;
    if (read === null || st.done || st.aborted) return;
    const refused = decisions.filter((d) => !d.allowed);
    if (refused.length) {
      return counters.refuse(res, st, refusal('rate_limited', route.rateLimitedMessage, { retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)) }), cors);
    }

    // 8. validate and stamp
    const projectId = admitted.key.project.id;
    const outcome = route.parse(read, { projectId, originHost: admitted.originHost, receivedAt: clock.now(), hasOrigin });
    if (!('ok' in outcome)) return counters.refuse(res, st, outcome, cors);

    // 9. hand off: one message per request, the 202 only after the bus holds it
    try {
      await route.publish({ key: projectId, value: outcome.value });
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'bus publish failed; answering 503');
      return counters.refuse(res, st, refusal('bus_unavailable', 'ingest is temporarily unavailable, retry later'), cors);
    }
    counters.accepted(outcome.events);
    send(res, st, 202, [['Content-Type', 'application/json'], ...cors], `{"ingested":${outcome.events}}`);
  }

  app.any(route.path, (res) => {
    sendError(res, immediateReply(), 'method_not_allowed', 'use POST', [['Allow', 'POST, OPTIONS']]);
  });
}
