import { z } from 'zod';
import { AnalyticsEventSchema } from '../../schemas/analytics-event.ts';
import { ErrorEventSchema } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * The OpenAPI entries of the routes the uWebSockets.js edge serves (ingest/), which Fastify never sees: written from
 * the same zod schemas the edge validates with, and merged into `GET /v1/openapi.json`.
 */
const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
const ErrorBody = { type: 'object', properties: { error: { type: 'string' }, message: { type: 'string' } }, required: ['error', 'message'] };
const failures = (codes: Record<string, string>) =>
  Object.fromEntries(Object.entries(codes).map(([status, description]) => [status, { description, content: { 'application/json': { schema: ErrorBody } } }]));
const ingestKey = [{ ingestKey: [] }];

const FlagAnswer = {
  type: 'object',
  properties: {
    enabled: { type: 'boolean' },
    variant: { type: ['string', 'null'] },
    payload: { description: "the flag's JSON payload when enabled, else null" },
    reason: { type: 'string', enum: ['disabled', 'no_condition_match', 'out_of_rollout', 'rollout', 'unknown_flag'] },
  },
  required: ['enabled', 'variant', 'payload', 'reason'],
};

let built: Record<string, unknown> | undefined;

/** Built once: the schemas do not change while the process runs. */
export function edgeOpenApiPaths(): Record<string, unknown> {
  return (built ??= build());
}

function build(): Record<string, unknown> {
  const A = LIMITS.analyticsBatch;
  const errorBatch = { required: true, content: { 'application/json': { schema: json(z.object({ batch: z.array(ErrorEventSchema).min(1).max(LIMITS.errorBatch.maxEvents) })) } } };
  return {
    '/v1/errors/i': {
      post: {
        tags: ['ingest'],
        summary: `Error ingest (§7.2): 1-${LIMITS.errorBatch.maxEvents} events, at most ${LIMITS.errorBatch.maxBodyBytes} bytes`,
        security: ingestKey,
        requestBody: errorBatch,
        responses: {
          202: { description: 'accepted: `{ ingested }`' },
          204: { description: 'the project is paused: taken and dropped' },
          ...failures({ 400: 'invalid_request', 401: 'unauthorized', 403: 'forbidden, origin_not_allowed', 413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited, errors_capped (Retry-After)', 503: 'unavailable (Retry-After)' }),
        },
      },
    },
    '/service/v1/errors/i': {
      post: {
        tags: ['ingest'],
        summary: "Error ingest on a site's own host (§7.1): no credential; the platform attaches the project's ingest key. cx.js posts here.",
        requestBody: errorBatch,
        responses: { 202: { description: 'accepted: `{ ingested }`' }, ...failures({ 404: 'not_found (the host is no site)', 401: 'unauthorized (the project has no live ingest key)' }) },
      },
    },
    '/api/{projectNumber}/envelope/': {
      post: {
        tags: ['ingest'],
        summary: "Sentry SDKs' envelope endpoint: the key from X-Sentry-Auth or ?sentry_key= (an ingest key's DSN); gzip, deflate or br; event items become error events, other items are dropped",
        parameters: [{ name: 'projectNumber', in: 'path', required: true, schema: { type: 'string', pattern: '^\\d+$' } }],
        requestBody: { required: true, content: { 'application/x-sentry-envelope': { schema: { type: 'string' } } } },
        responses: { 200: { description: "Sentry's `{ id }`" }, ...failures({ 403: 'forbidden (another project), origin_not_allowed', 413: 'payload_too_large', 429: 'rate_limited, errors_capped (Retry-After, X-Sentry-Rate-Limits)' }) },
      },
    },
    '/v1/analytics/i': {
      post: {
        tags: ['ingest'],
        summary: `Analytics capture: 1-${A.maxEvents} events, at most ${A.maxBodyBytes} bytes; a malformed event is dropped and named in \`rejected\`, the rest are taken`,
        security: ingestKey,
        requestBody: { required: true, content: { 'application/json': { schema: json(z.object({ batch: z.array(AnalyticsEventSchema).min(1).max(A.maxEvents) })) } } },
        responses: {
          202: {
            description: 'accepted',
            content: {
              'application/json': {
                schema: { type: 'object', properties: { ingested: { type: 'integer' }, rejected: { type: 'array', items: { type: 'object', properties: { index: { type: 'integer' }, fields: { type: 'array', items: { type: 'object' } } } } } } },
              },
            },
          },
          204: { description: 'the project is paused' },
          ...failures({ 400: 'invalid_request (no valid event, or not a batch)', 401: 'unauthorized', 403: 'forbidden, origin_not_allowed', 413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited, analytics_quota_exceeded (Retry-After)', 503: 'unavailable' }),
        },
      },
    },
    '/v1/flags/i': {
      get: {
        tags: ['ingest'],
        summary: "The caller's feature flags, evaluated on the edge; unknown keys answer unknown_flag; ETag / If-None-Match",
        security: ingestKey,
        parameters: [
          { name: 'distinctId', in: 'query', required: true, schema: { type: 'string', maxLength: 200 } },
          { name: 'keys', in: 'query', schema: { type: 'string' }, description: 'comma-separated flag keys (at most 100); absent: every flag' },
          { name: 'properties', in: 'query', schema: { type: 'string' }, description: 'a JSON object the conditions test' },
          { name: 'deployId', in: 'query', schema: { type: 'string' }, description: 'without an Origin: the deploy whose environment applies (or gitSha)' },
        ],
        responses: {
          200: { description: 'the answers', content: { 'application/json': { schema: { type: 'object', properties: { flags: { type: 'object', additionalProperties: FlagAnswer } } } } } },
          304: { description: 'the same answer as the ETag given' },
          ...failures({ 400: 'invalid_request', 401: 'unauthorized', 403: 'forbidden, origin_not_allowed', 429: 'rate_limited (Retry-After)' }),
        },
      },
    },
    '/v1/w/cx.js': {
      get: { tags: ['ingest'], summary: 'The browser client (also at the versioned, immutable URL /v1/w/manifest.json names)', responses: { 200: { description: 'JavaScript' }, 304: { description: 'not modified' } } },
    },
  };
}
