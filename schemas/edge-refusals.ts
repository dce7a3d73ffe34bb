import { DISK_FULL_RETRY_AFTER_SEC, UNAVAILABLE_RETRY_AFTER_SEC, type ErrorCode } from './error-codes.ts';

/**
 * Every way the edge refuses a request, by snake_case reason (counted, served by each route's health
 * path), and how each is answered on the wire; the edge's OpenAPI entries are written from it too. A route refuses with a reason and a message; this table
 * alone decides the code, the status (schemas/error-codes.ts) and whether the connection is closed.
 */
export const REFUSALS = {
  unauthorized: { code: 'unauthorized' },
  /** The same-origin path on a Host that is no site of ours. */
  not_a_site: { code: 'not_found' },
  /** The same-origin path of a project without a live ingest key to attach. */
  no_site_key: { code: 'unauthorized' },
  /** A Sentry DSN whose project number is not the key's project. */
  project_mismatch: { code: 'forbidden' },
  forbidden_credential: { code: 'forbidden' },
  unsupported_media_type: { code: 'unsupported_media_type' },
  /** The body is not read to its end, so the connection cannot be reused. */
  too_large: { code: 'payload_too_large', close: true },
  invalid_request: { code: 'invalid_request' },
  /** A compressed body that inflates past its limit (read whole, so the connection stays usable). */
  too_large_decompressed: { code: 'payload_too_large' },
  unsupported_encoding: { code: 'unsupported_media_type' },
  /**
   * With the request's CORS headers, as every refusal: the page (and Sentry's SDK) can read why it was refused
   * instead of a bare "blocked by CORS policy". The answer carries nothing but the code.
   */
  origin_not_allowed: { code: 'origin_not_allowed' },
  rate_limited: { code: 'rate_limited' },
  capped: { code: 'errors_capped' },
  /** Analytics: the project's monthly event quota is used up. */
  quota_exceeded: { code: 'analytics_quota_exceeded' },
  /** A paused project's events are taken and dropped: 204, nothing published. */
  paused: { status: 204 },
  bus_unavailable: { code: 'unavailable', retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC },
  limiter_unavailable: { code: 'unavailable', retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC },
  /** The edge holds as many bytes of large bodies as it may (ingest/http/body-budget.ts): retry in a moment. */
  edge_busy: { code: 'unavailable', retryAfterSec: 2 },
  /** DATA_DIR's disk is low (platform/data-dir/disk-space.ts), or the bus's log could not be written for want of space. */
  disk_full: { code: 'unavailable', retryAfterSec: DISK_FULL_RETRY_AFTER_SEC },
  /** Our bug: a step threw. Answered 500 (no internals), counted, and the edge keeps serving. */
  internal: { code: 'internal' },
} as const satisfies Record<string, { code: ErrorCode; close?: true; retryAfterSec?: number } | { status: 204 }>;

export type RefusalReason = keyof typeof REFUSALS;
export const REFUSAL_REASONS = Object.keys(REFUSALS) as RefusalReason[];
