import { randomUUID } from 'node:crypto';
import type uWS from 'uWebSockets.js';
import { environmentOfHost } from '../../domain/host-patterns.ts';
import { evaluateFlag, UNKNOWN_FLAG } from '../../domain/flag-evaluation.ts';
import { posthogFlagDetail, posthogFlagsResponse } from '../../domain/posthog-flags.ts';
import type { Environment } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';
import { batchRequestHeaders, ingestCredential, originAllowed } from '../admission.ts';
import { flagKeyOf, flagsPreflight } from '../flags-route.ts';
import type { EdgeContext } from '../batch-route.ts';
import type { FlagCache } from '../flag-cache.ts';
import { clientIp, immediateReply, readBody, send, sendError, timedReply, watchedReply, type Headers, type ReplyState } from '../http/uws-reply.ts';
import { originHostOf } from '../origin-policy.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { isObject, openPostHogBody } from './posthog-body.ts';
import { posthogErrorFields } from './posthog-capture.ts';

/**
 * PostHog's flag endpoints (issue 28): `POST /flags/?v=2` (posthog-js, posthog-node) and `POST /decide/` (older SDKs),
 * answered from the same edge evaluation as `GET /v1/flags/i` (flag-cache.ts, domain/flag-evaluation.ts), in PostHog's
 * shape (domain/posthog-flags.ts). No database I/O per request. In order:
 *   1. body: read (at most LIMITS.posthog.maxBodyBytes) and opened (gzip, the `data=` form, JSON)   400 / 413
 *   2. credential: the body's `token` / `api_key` (else the request's ingest key headers)         401 / 403
 *   3. Origin allowed for the project (§7.3)                                                          403
 *   4. `distinct_id` (required), `person_properties` (an object), `flag_keys` (optional)             400
 *   5. rate limits per key and IP, and per key (the flags route's)                                   429
 *   6. evaluate every flag (or those named) in the Origin's environment (none: unknown), answer 200
 * posthog-js's remote config (`/array/:token/config`), which it loads first, is posthog-assets.ts's.
 */
export const POSTHOG_FLAGS_PATHS = [EDGE_PATHS.posthogFlags, EDGE_PATHS.posthogDecide] as const;
const MINUTE_MS = 60_000;
const F = LIMITS.analyticsFields;

interface FlagsAsk {
  distinctId: string;
  properties: Record<string, unknown>;
  keys: string[] | undefined;
}

/** Pure: what an opened `/flags/` body asks. */
export function posthogFlagsAsk(json: unknown): FlagsAsk | Refusal {
  if (!isObject(json)) return refusal('invalid_request', 'the body must be a JSON object');
  const id = typeof json.distinct_id === 'number' ? String(json.distinct_id) : json.distinct_id;
  if (typeof id !== 'string' || !id || id.length > F.distinctId)
    return refusal('invalid_request', `distinct_id is required (at most ${F.distinctId} characters)`, {
      fields: [{ path: 'distinct_id', message: 'required' }],
    });
  const props = json.person_properties ?? {};
  if (!isObject(props))
    return refusal('invalid_request', 'person_properties must be an object', { fields: [{ path: 'person_properties', message: 'not an object' }] });
  const named = json.flag_keys ?? json.flag_keys_to_evaluate;
  const keys = Array.isArray(named) ? named.filter((k): k is string => typeof k === 'string').slice(0, LIMITS.flagsQuery.maxKeys) : undefined;
  return { distinctId: id, properties: props, keys };
}

export function registerPostHogFlags(edge: EdgeContext, flags: FlagCache): void {
  const { app, platform, cache, counters, log } = edge;
  const { config, limiter } = platform;
  const rate = LIMITS.flagsRate;
  const max = LIMITS.posthog.maxBodyBytes;

  const refuse = (res: uWS.HttpResponse, st: ReplyState, r: Refusal, cors: Headers) => counters.refuse(res, st, { ...r, body: posthogErrorFields(r) }, cors);

  for (const base of POSTHOG_FLAGS_PATHS) {
    for (const path of [base, base.slice(0, -1)]) {
      app.options(path, (res, req) =>
        send(
          res,
          immediateReply(),
          204,
          flagsPreflight(req.getHeader('origin'), 'POST', 'content-type, content-encoding, authorization, x-service-analytics-key'),
        ),
      );
      app.post(path, (res, req) => post(res, req, base));
      app.any(path, (res, req) => sendError(res, immediateReply(req), 'method_not_allowed', 'use POST', [['Allow', 'POST, OPTIONS']]));
    }
  }

  function post(res: uWS.HttpResponse, req: uWS.HttpRequest, route: string): void {
    const st = timedReply(watchedReply(res), route, edge.observe);
    const h = batchRequestHeaders(req);
    const ip = clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY);
    const cors: Headers = h.origin
      ? [
          ['Access-Control-Allow-Origin', h.origin],
          ['Vary', 'Origin'],
          ['Access-Control-Expose-Headers', 'Retry-After'],
        ]
      : [];
    const tooLarge = refusal('too_large', `body exceeds ${max} bytes`);
    if ((Number(h.contentLength) || 0) > max) return refuse(res, st, tooLarge, cors);
    const body = readBody(res, st, max, () => refuse(res, st, tooLarge, cors));
    void (async () => {
      // 1. body
      const read = await body;
      if (read === null || st.done || st.aborted) return;
      const opened = openPostHogBody(read.body, h);
      if ('reason' in opened) return refuse(res, st, opened, cors);
      // 2. credential
      const key = flagKeyOf(cache, opened.token || ingestCredential(h), 'a project key is required (token or api_key in the body)');
      if ('reason' in key) return refuse(res, st, key, cors);
      // 3. origin
      const originHost = h.origin ? originHostOf(h.origin) : null;
      if (h.origin && !originAllowed(key.project, originHost, config.WIDGET_HOSTS))
        return refuse(res, st, refusal('origin_not_allowed', `origin ${originHost ?? h.origin} may not use this project`), cors);
      // 4. the question
      const ask = posthogFlagsAsk(opened.json);
      if ('reason' in ask) return refuse(res, st, ask, cors);
      // 5. rate limits
      let decisions: Array<{ allowed: boolean; retryAfterSec: number }>;
      try {
        decisions = await limiter.hitAll([
          { key: `flags:ki:${key.keyId}:${ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
          { key: `flags:k:${key.keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
        ]);
      } catch {
        return refuse(res, st, refusal('limiter_unavailable', 'flags are temporarily unavailable, retry later'), cors);
      }
      const refused = decisions.filter((d) => !d.allowed);
      if (refused.length)
        return refuse(
          res,
          st,
          refusal('rate_limited', 'too many flag requests for this key', { retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)) }),
          cors,
        );
      // 6. evaluate and answer
      const environment: Environment = originHost ? (environmentOfHost(key.project, originHost) ?? 'unknown') : 'unknown';
      const defs = flags.of(key.project.id)?.flags;
      const ctx = { distinctId: ask.distinctId, properties: ask.properties, environment };
      const details = (ask.keys ?? [...(defs?.keys() ?? [])]).map((k) => {
        const flag = defs?.get(k);
        return posthogFlagDetail(k, flag, flag ? evaluateFlag(flag, ctx) : UNKNOWN_FLAG);
      });
      counters.accepted(1);
      edge.keyUsage?.used(key.keyId);
      send(
        res,
        st,
        200,
        [['Content-Type', 'application/json'], ['Cache-Control', 'no-store'], ...cors],
        JSON.stringify(posthogFlagsResponse(details, randomUUID())),
      );
    })().catch((err) => {
      log.error({ err }, 'posthog flags failed');
      refuse(res, st, refusal('internal', 'internal error'), cors);
    });
  }
}
