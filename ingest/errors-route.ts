import { environmentOfHost } from '../domain/host-patterns.ts';
import { LIMITS } from '../schemas/limits.ts';
import { secondsToMonthEnd } from '../domain/usage-month.ts';
import type { BatchFeed, BatchRoute } from './batch-route.ts';
import { parseErrorBatch } from './error-batch.ts';
import { userAgentOf } from '../schemas/error-event.ts';
import { refusal } from './refusals.ts';
import { EDGE_PATHS } from '../schemas/api/edge.ts';
import { EDGE_SUPPORT_PATHS } from '../schemas/api/route-table.ts';

/** `POST /v1/errors/i` (spec §4.2, §7): error batches from browsers and servers, onto the error topic. */
export const ERRORS_INGEST_PATH = EDGE_PATHS.errors;
export const ERRORS_INGEST_HEALTH_PATH = EDGE_SUPPORT_PATHS.errorsHealth;
/** §7.1: the same route on a site's own host, for cx.js; the edge attaches the project's ingest key. */
export const SITE_ERRORS_PATH = EDGE_PATHS.siteErrors;
const MINUTE_MS = 60_000;

export function errorsRoute(deps: { now: () => number; publish: BatchFeed['publish'] }): BatchRoute {
  const rate = LIMITS.errorIngestRate;
  return {
    paths: { path: ERRORS_INGEST_PATH, healthPath: ERRORS_INGEST_HEALTH_PATH },
    feed: {
      // Monthly caps (§7.5): the edge knows the environment only from the Origin (a host off the project's
      // domains is `unknown`); without one it refuses only when every environment the processor could stamp
      // is capped (the processor enforces caps exactly).
      cap(project, origin) {
        const c = project.capped;
        const capped = origin.present ? c[(origin.host && environmentOfHost(project, origin.host)) || 'unknown'] : c.production && c.preview && c.unknown;
        return capped ? refusal('capped', 'this project is over its monthly error cap', { retryAfterSec: secondsToMonthEnd(deps.now()) }) : undefined;
      },
      rateLimits: (keyId, ip) => [
        { key: `errors:ki:${keyId}:${ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
        { key: `errors:k:${keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
      ],
      rateLimitedMessage: 'too many requests for this ingest key',
      publish: deps.publish,
    },
    format: {
      maxBodyBytes: LIMITS.errorBatch.maxBodyBytes,
      parse(read, ctx) {
        const outcome = parseErrorBatch(
          read.body,
          {
            projectId: ctx.projectId,
            originHost: ctx.originHost,
            receivedAt: ctx.receivedAt,
            defaultRuntime: ctx.hasOrigin ? 'browser' : 'node',
            userAgent: userAgentOf(ctx.userAgent),
          },
          read.room,
        );
        return outcome.ok ? outcome : refusal('invalid_request', outcome.message, { fields: outcome.fields });
      },
    },
  };
}
