import { randomUUID } from 'node:crypto';
import { parseBoundedJson } from '../platform/bounded-json.ts';
import * as clientItems from '../schemas/bus/client-items.ts';
import { EDGE_PATHS, SessionsBatchBody } from '../schemas/api/edge.ts';
import { EDGE_SUPPORT_PATHS } from '../schemas/api/route-table.ts';
import { LIMITS } from '../schemas/limits.ts';
import type { BatchFeed, BatchRoute, ParseContext, Parsed } from './batch-route.ts';
import { refusal, type Refusal } from './refusals.ts';
import { kindLimits } from './sentry/envelope-limits.ts';

/**
 * `POST /v1/sessions/i` (issue 40): release health's cheap path for our own clients (cx.js sends one session update
 * per page load, when told to). The body is `{ sessions: [SessionUpdate, ...] }`, the bus's own shape
 * (schemas/bus/client-items.ts), validated whole; the updates go onto the client-items topic as one message stamped
 * with the request's User-Agent. Same key, origin, paused and disk rules as error ingest (batch-route.ts); no cap,
 * and the rate limits of Sentry's session items (the same keys: one budget per ingest key, whichever way sessions come).
 * Also on a site's own host (`/service/v1/sessions/i`, §7.1).
 */
export const SESSIONS_INGEST_PATH = EDGE_PATHS.sessions;
export const SITE_SESSIONS_PATH = EDGE_PATHS.siteSessions;
export const SESSIONS_INGEST_HEALTH_PATH = EDGE_SUPPORT_PATHS.sessionsHealth;

/** Pure: the body as one client-items message, or why it is refused. */
export function parseSessionsBatch(body: Buffer, ctx: Pick<ParseContext, 'projectId' | 'originHost' | 'receivedAt' | 'userAgent'>): Parsed | Refusal {
  const bounded = parseBoundedJson(body.toString('utf8'));
  if (!bounded.ok) return refusal('invalid_request', bounded.reason === 'too_deep' ? `body is ${bounded.message}` : 'body is not valid JSON');
  const parsed = SessionsBatchBody.safeParse(bounded.value);
  if (!parsed.success) {
    const fields = parsed.error.issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message }));
    return refusal('invalid_request', `invalid sessions batch: ${fields.map((f) => f.path).join(', ')}`, { fields });
  }
  const message: clientItems.ClientItemsMessage = {
    v: 1,
    batchId: randomUUID(),
    projectId: ctx.projectId,
    originHost: ctx.originHost,
    receivedAt: ctx.receivedAt,
    sessions: parsed.data.sessions,
  };
  if (ctx.userAgent) message.userAgent = ctx.userAgent.slice(0, 512);
  return { ok: true, events: parsed.data.sessions.length, value: clientItems.encode(message) };
}

export function sessionsRoute(deps: { publish: BatchFeed['publish'] }): BatchRoute {
  return {
    paths: { path: SESSIONS_INGEST_PATH, healthPath: SESSIONS_INGEST_HEALTH_PATH },
    feed: {
      cap: () => undefined,
      // The limits of Sentry's session items (sentry/envelope-limits.ts): one budget per ingest key, whichever way sessions come.
      rateLimits: (keyId, ip) => kindLimits('sessions', keyId, ip),
      rateLimitedMessage: 'too many session requests for this ingest key',
      publish: deps.publish,
    },
    format: { maxBodyBytes: LIMITS.sessionsBatch.maxBodyBytes, parse: (read, ctx) => parseSessionsBatch(read.body, ctx) },
  };
}
