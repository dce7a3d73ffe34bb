import type { HttpRequest } from 'uWebSockets.js';
import { hostnameOf, matchesAny } from '../domain/host-patterns.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { bearer } from './http/uws-reply.ts';
import { originHostOf } from './origin-policy.ts';
import type { EdgeKey, EdgeProject, ProjectCache } from './project-cache.ts';
import { refusal, type Refusal } from './refusals.ts';
import { DISK_FULL_MESSAGE } from '../platform/data-dir/disk-space.ts';

/**
 * Whether the edge takes a batch, decided from the request's headers and the in-memory project cache
 * alone (no I/O), before a byte of the body is read. In order:
 *   1. credential: an ingest key (Bearer or x-service-analytics-key)     unauthorized / forbidden_credential
 *   2. Content-Type application/json                                      unsupported_media_type
 *   3. declared Content-Length within the route's limit                   too_large
 *   4. Origin allowed for the project (§7.3)                              origin_not_allowed
 *   5. paused project                                                     paused
 *   6. the route's cap (errors: the monthly cap, §7.5)                    capped
 *   7. room on DATA_DIR's disk (platform/data-dir/disk-space.ts)          disk_full (503, nothing published)
 */
export interface BatchRequestHeaders {
  authorization: string;
  analyticsKey: string;
  contentType: string;
  contentLength: string;
  contentEncoding: string;
  origin: string;
  host: string;
  /** Sentry SDKs' credential header (ingest/sentry/). */
  sentryAuth: string;
  /** The query string, without `?`. */
  query: string;
  /** The route's first path parameter (`/api/:projectId/...`), '' for routes without one. */
  param: string;
  /** A browser event's contexts come from it when the event names none (issue 40). */
  userAgent: string;
}

/** Copies what admission reads: HttpRequest is only valid until the handler's first await. */
export function batchRequestHeaders(req: HttpRequest, hasParam = false): BatchRequestHeaders {
  return {
    authorization: req.getHeader('authorization'),
    analyticsKey: req.getHeader('x-service-analytics-key'),
    contentType: req.getHeader('content-type'),
    contentLength: req.getHeader('content-length'),
    contentEncoding: req.getHeader('content-encoding'),
    origin: req.getHeader('origin'),
    host: req.getHeader('host'),
    sentryAuth: req.getHeader('x-sentry-auth'),
    query: req.getQuery() ?? '',
    param: hasParam ? (req.getParameter(0) ?? '') : '',
    userAgent: req.getHeader('user-agent'),
  };
}

/** The token a request to our own ingest routes carries: `Authorization: Bearer` or `x-service-analytics-key`. */
export function ingestCredential(h: BatchRequestHeaders): string {
  return (h.authorization && bearer(h.authorization)) || h.analyticsKey.trim();
}

/** `application/json`, with or without parameters. */
export function isJsonMediaType(contentType: string): boolean {
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

export interface Admitted {
  ok: true;
  key: EdgeKey;
  /** The Origin's host (origin-policy.ts), null without an Origin header. */
  originHost: string | null;
  declaredLength: number;
}

export interface AdmissionRules {
  cache: ProjectCache;
  /** Step 1: the token the request carries (default ingestCredential; Sentry SDKs send theirs otherwise). */
  credential?(h: BatchRequestHeaders): string;
  /** Step 2: the media types taken (default isJsonMediaType). */
  mediaType?(contentType: string): boolean;
  /** After step 1: a route's own check of the key against the request (Sentry: the DSN's project number). */
  check?(key: EdgeKey, h: BatchRequestHeaders): Refusal | undefined;
  /** WIDGET_HOSTS: always allowed to post browser events (§7.3). */
  widgetHosts: string[];
  maxBodyBytes: number;
  /** Step 6: a refusal when the project is over the route's cap for this request, else undefined. */
  cap(project: EdgeProject, origin: { present: boolean; host: string | null }): Refusal | undefined;
  /** Step 7: whether DATA_DIR's disk is low (the platform's watch); absent: never. */
  diskLow?(): boolean;
}

/** Credentials of ours that are not ingest keys: a 403, not a 401 (the caller is known, the route is not theirs). */
export const OTHER_CREDENTIAL_PREFIXES = [
  TOKEN_PREFIX.liveKey,
  TOKEN_PREFIX.testKey,
  TOKEN_PREFIX.cliToken,
  TOKEN_PREFIX.deployHook,
  TOKEN_PREFIX.session,
  'cxm_',
];

/**
 * `siteKey`: the key a site's same-origin path attaches (the Host named the project, so step 1 is done: the
 * request's own credential headers are not read).
 */
export function admitBatch(h: BatchRequestHeaders, rules: AdmissionRules, siteKey?: EdgeKey): Admitted | Refusal {
  // 1. credential
  let key = siteKey;
  if (!key) {
    const token = rules.credential ? rules.credential(h) : ingestCredential(h);
    if (!token) return refusal('unauthorized', 'an ingest key is required (Authorization: Bearer cak_live_... or x-service-analytics-key)');
    if (!token.startsWith(TOKEN_PREFIX.ingestKey)) {
      if (OTHER_CREDENTIAL_PREFIXES.some((p) => token.startsWith(p)))
        return refusal('forbidden_credential', 'only an ingest key (cak_live_) may post to this route');
      return refusal('unauthorized', 'unknown or revoked ingest key');
    }
    key = rules.cache.byToken(token);
    if (!key) return refusal('unauthorized', 'unknown or revoked ingest key');
    const mismatch = rules.check?.(key, h);
    if (mismatch) return mismatch;
  }
  const project = key.project;

  // 2. media type
  if (!(rules.mediaType ?? isJsonMediaType)(h.contentType)) return refusal('unsupported_media_type', 'Content-Type must be application/json');

  // 3. declared size
  const declaredLength = Number(h.contentLength) || 0;
  if (declaredLength > rules.maxBodyBytes) return refusal('too_large', `body exceeds ${rules.maxBodyBytes} bytes`);

  // 4. origin (§7.3): no origin list means every origin; otherwise the project's own domains, the
  // widget hosts and the listed origins. On a site's same-origin path, a page of that very site (its Origin is the
  // Host that named the project: the slug host, a deploy host, a verified domain) is the project's own.
  let originHost: string | null = null;
  if (h.origin) {
    originHost = originHostOf(h.origin);
    const ownSite = siteKey !== undefined && originHost !== null && hostnameOf(originHost) !== '' && hostnameOf(originHost) === hostnameOf(h.host);
    if (!ownSite && !originAllowed(project, originHost, rules.widgetHosts))
      return refusal('origin_not_allowed', `origin ${originHost ?? h.origin} may not post to this project`);
  }

  // 5. paused
  if (project.paused) return refusal('paused', 'project is paused');

  // 6. cap
  const capped = rules.cap(project, { present: h.origin !== '', host: originHost });
  if (capped) return capped;

  // 7. disk: what is refused now is never half-taken; the client retries after Retry-After
  if (rules.diskLow?.()) return refusal('disk_full', DISK_FULL_MESSAGE);

  return { ok: true, key, originHost, declaredLength };
}

/**
 * §7.3 for a request with an Origin (`originHost`: originHostOf it, null when it has no host): no origin list means
 * every origin; otherwise the project's own domains, the widget hosts and the listed origins.
 */
export function originAllowed(project: EdgeProject, originHost: string | null, widgetHosts: string[]): boolean {
  return (
    project.ingestOrigins.length === 0 ||
    (originHost !== null &&
      (matchesAny(originHost, project.productionDomains) ||
        matchesAny(originHost, project.previewDomains) ||
        matchesAny(originHost, widgetHosts) ||
        matchesAny(originHost, project.ingestOrigins)))
  );
}
