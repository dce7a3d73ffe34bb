import { parseBoundedJson } from '../platform/bounded-json.ts';
import { hash } from 'node:crypto';
import type uWS from 'uWebSockets.js';
import { environmentOfHost } from '../domain/host-patterns.ts';
import type { Environment } from '../schemas/error-event.ts';
import type { FlagAnswer, FlagDefinition } from '../schemas/flags.ts';
import { evaluateFlag, UNKNOWN_FLAG } from '../domain/flag-evaluation.ts';
import { LIMITS } from '../schemas/limits.ts';
import { ingestCredential, originAllowed, OTHER_CREDENTIAL_PREFIXES, type BatchRequestHeaders } from './admission.ts';
import type { EdgeContext } from './batch-route.ts';
import type { FlagCache, ProjectFlags } from './flag-cache.ts';
import { clientIp, immediateReply, send, sendError, timedReply, watchedReply, type Headers, type ReplyState } from './http/uws-reply.ts';
import type { EdgeKey, ProjectCache } from './project-cache.ts';
import { siteKeyOfHost } from './site-key.ts';
import { originHostOf } from './origin-policy.ts';
import { refusal, type Refusal } from './refusals.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { EDGE_PATHS } from '../schemas/api/edge.ts';
import { EDGE_SUPPORT_PATHS } from '../schemas/api/route-table.ts';

/**
 * `GET /v1/flags/i?distinctId=...&keys=a,b[&properties={json}][&deployId=|&gitSha=]` (spec §4.2; answer ours, issue
 * 16): the caller's feature flags, evaluated on the edge from memory (flag-cache.ts, schemas/flags.ts), with the
 * ingest key. No database I/O per request. In order:
 *   1. credential: an ingest key                       401 unauthorized / 403 forbidden
 *   2. Origin allowed for the project (§7.3)           403 origin_not_allowed
 *   3. query: distinctId (required), keys, properties  400 invalid_request
 *   4. rate limits per key and IP, and per key         429 rate_limited
 *   5. evaluate: environment from the Origin by the project's domains, else the deploy named, else unknown
 *   6. `{ flags: { <key>: { enabled, variant, payload, reason } } }` with an ETag; If-None-Match answers 304
 * Unknown keys are answered `unknown_flag`, not refused. Without `keys`, every flag of the project.
 */
export const FLAGS_PATH = EDGE_PATHS.flags;
export const FLAGS_HEALTH_PATH = EDGE_SUPPORT_PATHS.flagsHealth;
/** The same on a site's own host, for cx.js (§7.1's same-origin way): no key in the page. */
export const SITE_FLAGS_PATH = EDGE_PATHS.siteFlags;
const MINUTE_MS = 60_000;
const MAX_KEYS = LIMITS.flagsQuery.maxKeys;
const MAX_PROPERTIES_CHARS = 8 * 1024;

interface FlagQuery {
  distinctId: string;
  keys: string[] | undefined;
  properties: Record<string, unknown>;
  deploy: string | undefined;
}

export function parseFlagQuery(query: string): FlagQuery | Refusal {
  let q: URLSearchParams;
  try {
    q = new URLSearchParams(query);
  } catch {
    return refusal('invalid_request', 'the query string does not parse');
  }
  const distinctId = q.get('distinctId') ?? '';
  if (!distinctId || distinctId.length > LIMITS.analyticsFields.distinctId)
    return refusal('invalid_request', `distinctId is required (at most ${LIMITS.analyticsFields.distinctId} characters)`, {
      fields: [{ path: 'distinctId', message: 'required' }],
    });
  const keysText = q.get('keys');
  const keys =
    keysText === null
      ? undefined
      : [
          ...new Set(
            keysText
              .split(',')
              .map((k) => k.trim())
              .filter(Boolean),
          ),
        ];
  if (keys && keys.length > MAX_KEYS) return refusal('invalid_request', `at most ${MAX_KEYS} keys`, { fields: [{ path: 'keys', message: 'too many' }] });
  let properties: Record<string, unknown> = {};
  const propsText = q.get('properties');
  if (propsText) {
    if (propsText.length > MAX_PROPERTIES_CHARS)
      return refusal('invalid_request', `properties at most ${MAX_PROPERTIES_CHARS} characters`, { fields: [{ path: 'properties', message: 'too long' }] });
    const parsed = parseBoundedJson(propsText);
    if (!parsed.ok && parsed.reason === 'too_deep')
      return refusal('invalid_request', `properties are ${parsed.message}`, { fields: [{ path: 'properties', message: 'too deep' }] });
    const value = parsed.ok ? parsed.value : undefined;
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      return refusal('invalid_request', 'properties must be a JSON object', { fields: [{ path: 'properties', message: 'not a JSON object' }] });
    properties = value as Record<string, unknown>;
  }
  const deploy = q.get('deployId') || q.get('gitSha') || undefined;
  return { distinctId, keys, properties, deploy };
}

/** JSON of each flag's payload, made once per definition (a definition is replaced, never changed, on refresh). */
const payloadJson = new WeakMap<FlagDefinition, string>();
const OFF_JSON: Record<string, string> = {};
const answerJson = (a: FlagAnswer, flag: FlagDefinition | undefined): string => {
  if (!a.enabled) return (OFF_JSON[a.reason] ??= JSON.stringify(a));
  let payload = payloadJson.get(flag!);
  if (payload === undefined) payloadJson.set(flag!, (payload = JSON.stringify(flag!.payload ?? null)));
  return `{"enabled":true,"variant":${a.variant === null ? 'null' : JSON.stringify(a.variant)},"payload":${payload},"reason":"${a.reason}"}`;
};

/**
 * The flag answers for a project as JSON, in the order asked (or the flags' order), and their ETag (a hash of the
 * body: the same answer, the same tag). Built as text: it is the whole cost of a request.
 */
export function flagsAnswer(flags: Map<string, FlagDefinition> | undefined, q: FlagQuery, environment: Environment): { body: string; etag: string } {
  const ctx = { distinctId: q.distinctId, properties: q.properties, environment };
  let body = '{"flags":{';
  let first = true;
  for (const key of q.keys ?? flags?.keys() ?? []) {
    const flag = flags?.get(key);
    const a = flag ? evaluateFlag(flag, ctx) : UNKNOWN_FLAG;
    body += `${first ? '' : ','}${JSON.stringify(key)}:${answerJson(a, flag)}`;
    first = false;
  }
  body += '}}';
  return { body, etag: `"${hash('sha1', body, 'base64url').slice(0, 22)}"` };
}

/**
 * Answers by (project, environment, query): a page asks the same question at every load, a server at every request,
 * and the answer is a pure function of those and the project's flags. An entry remembers the ProjectFlags object it
 * was made from, which the flag cache replaces only when the project's flags or deploys change, so a change is never
 * answered from here. At most MAX_CACHED_ANSWERS entries in all (cleared whole when full).
 */
const MAX_CACHED_ANSWERS = 5_000;
const answers = new Map<string, { from: ProjectFlags | undefined; body: string; etag: string }>();

function cachedAnswer(
  projectId: string,
  project: ProjectFlags | undefined,
  query: string,
  q: FlagQuery,
  environment: Environment,
): { body: string; etag: string } {
  const key = `${projectId}\n${environment}\n${query}`;
  const hit = answers.get(key);
  if (hit && hit.from === project) return hit;
  if (answers.size >= MAX_CACHED_ANSWERS) answers.clear();
  const made = { from: project, ...flagsAnswer(project?.flags, q, environment) };
  answers.set(key, made);
  return made;
}

/** The project key a flag request names (`missing`: what to say when it names none). */
export function flagKeyOf(cache: ProjectCache, token: string, missing: string): EdgeKey | Refusal {
  if (!token) return refusal('unauthorized', missing);
  const key = token.startsWith(TOKEN_PREFIX.ingestKey) ? cache.byToken(token) : undefined;
  if (key) return key;
  return OTHER_CREDENTIAL_PREFIXES.some((p) => token.startsWith(p))
    ? refusal('forbidden_credential', 'only an ingest key (cak_live_) may evaluate flags')
    : refusal('unauthorized', 'unknown or revoked ingest key');
}

/** A CORS preflight's answer: the request's origin may call with these methods and headers (a bad origin: none). */
export function flagsPreflight(origin: string, methods: string, allowHeaders: string): Headers {
  return origin && originHostOf(origin)
    ? [
        ['Access-Control-Allow-Origin', origin],
        ['Vary', 'Origin'],
        ['Access-Control-Allow-Methods', methods],
        ['Access-Control-Allow-Headers', allowHeaders],
        ['Access-Control-Max-Age', '600'],
      ]
    : [['Vary', 'Origin']];
}

/** A site's Host as an origin host: with its port when it names one; without, it matches port-less patterns. */
function siteOriginHost(host: string): string | null {
  return /:\d+$/.test(host) ? originHostOf(`http://${host}`) : host.toLowerCase() || null;
}

/** What a flag request carries, copied before any await (HttpRequest dies with the handler's stack). */
interface FlagRequest {
  authorization: string;
  analyticsKey: string;
  origin: string;
  ifNoneMatch: string;
  host: string;
  query: string;
  ip: string;
}

/**
 * Registers `GET /v1/flags/i` (ingest key) and, for cx.js on a site the platform serves, `GET /service/v1/flags/i` on
 * the site's own host (the Host names the project, whose ingest key the edge attaches, as for errors).
 */
export function registerFlagsRoute(edge: EdgeContext, flags: FlagCache): void {
  const { app, platform, cache, counters } = edge;
  const { config, limiter } = platform;
  const rate = LIMITS.flagsRate;

  app.get(FLAGS_HEALTH_PATH, (res) => {
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

  for (const [path, siteKeyed] of [
    [FLAGS_PATH, false],
    [SITE_FLAGS_PATH, true],
  ] as const) {
    app.options(path, (res, req) =>
      send(res, immediateReply(), 204, flagsPreflight(req.getHeader('origin'), 'GET', 'authorization, x-service-analytics-key, if-none-match')),
    );
    app.get(path, (res, req) => {
      const st = timedReply(watchedReply(res, req), path, edge.observe);
      const r: FlagRequest = {
        authorization: req.getHeader('authorization'),
        analyticsKey: req.getHeader('x-service-analytics-key'),
        origin: req.getHeader('origin'),
        ifNoneMatch: req.getHeader('if-none-match'),
        host: req.getHeader('host'),
        query: req.getQuery() ?? '',
        ip: clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY),
      };
      const cors: Headers = r.origin
        ? [
            ['Access-Control-Allow-Origin', r.origin],
            ['Vary', 'Origin'],
            ['Access-Control-Expose-Headers', 'ETag, Retry-After'],
          ]
        : [];
      const key = siteKeyed ? siteKeyOfHost(edge.sites, cache, r.host, r.ip) : tokenKey(r);
      if (key instanceof Promise)
        void key.then(
          (k) => answer(res, st, r, k, cors, siteKeyed),
          () => counters.refuse(res, st, refusal('limiter_unavailable', 'flags are temporarily unavailable, retry later'), cors),
        );
      else answer(res, st, r, key, cors, siteKeyed);
    });
    app.any(path, (res, req) => sendError(res, immediateReply(req), 'method_not_allowed', 'use GET', [['Allow', 'GET, OPTIONS']]));
  }

  // 1. credential: the request's ingest key, or the site's
  const tokenKey = (r: FlagRequest) =>
    flagKeyOf(
      cache,
      ingestCredential(r as unknown as BatchRequestHeaders),
      'an ingest key is required (Authorization: Bearer cak_live_... or x-service-analytics-key)',
    );

  function answer(res: uWS.HttpResponse, st: ReplyState, r: FlagRequest, key: EdgeKey | Refusal, cors: Headers, siteKeyed: boolean): void {
    if ('reason' in key) return counters.refuse(res, st, key, cors);
    // 2. origin (a same-origin GET carries none: on a site, the page's origin is the Host)
    const originHost = r.origin ? originHostOf(r.origin) : siteKeyed ? siteOriginHost(r.host) : null;
    if (r.origin && !originAllowed(key.project, originHost, config.WIDGET_HOSTS))
      return counters.refuse(res, st, refusal('origin_not_allowed', `origin ${originHost ?? r.origin} may not use this project`), cors);
    // 3. query
    const q = parseFlagQuery(r.query);
    if ('reason' in q) return counters.refuse(res, st, q, cors);
    // 4. rate limits
    const projectId = key.project.id;
    limiter
      .hitAll([
        { key: `flags:ki:${key.keyId}:${r.ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
        { key: `flags:k:${key.keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
      ])
      .then(
        (decisions) => {
          const refused = decisions.filter((d) => !d.allowed);
          if (refused.length)
            return counters.refuse(
              res,
              st,
              refusal('rate_limited', 'too many flag requests for this ingest key', { retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)) }),
              cors,
            );
          // 5. evaluate
          const environment: Environment = originHost
            ? (environmentOfHost(key.project, originHost) ?? 'unknown')
            : q.deploy
              ? (flags.environmentOfDeploy(projectId, q.deploy) ?? 'unknown')
              : 'unknown';
          const a = cachedAnswer(projectId, flags.of(projectId), r.query, q, environment);
          // 6. answer
          counters.accepted(1);
          edge.keyUsage?.used(key.keyId);
          const headers: Headers = [['ETag', a.etag], ['Cache-Control', 'private, no-cache'], ...cors];
          if (r.ifNoneMatch && r.ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === a.etag)) return send(res, st, 304, headers);
          send(res, st, 200, [['Content-Type', 'application/json'], ...headers], a.body);
        },
        () => counters.refuse(res, st, refusal('limiter_unavailable', 'flags are temporarily unavailable, retry later'), cors),
      );
  }
}
