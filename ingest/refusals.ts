import type uWS from 'uWebSockets.js';
import { UNAVAILABLE_RETRY_AFTER_SEC, type ErrorBody, type ErrorCode } from '../schemas/error-codes.ts';
import { send, sendError, type Headers, type ReplyState } from './http/uws-reply.ts';

/**
 * Every way the edge refuses a request, by snake_case reason (counted, served by each route's health
 * path), and how each is answered on the wire. A route refuses with a reason and a message; this table
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
  /** Our bug: a step threw. Answered 500 (no internals), counted, and the edge keeps serving. */
  internal: { code: 'internal' },
} as const satisfies Record<string, { code: ErrorCode; close?: true; retryAfterSec?: number } | { status: 204 }>;

export type RefusalReason = keyof typeof REFUSALS;
export const REFUSAL_REASONS = Object.keys(REFUSALS) as RefusalReason[];

/** A decision not to accept a request, as a value. */
export interface Refusal {
  reason: RefusalReason;
  message: string;
  /** Overrides the table's Retry-After (rate limits and caps know theirs). */
  retryAfterSec?: number;
  fields?: ErrorBody['fields'];
}

export const refusal = (reason: RefusalReason, message: string, extra: Omit<Refusal, 'reason' | 'message'> = {}): Refusal => ({ reason, message, ...extra });

export interface RefusalCounters {
  /** accepted_events, accepted_batches and one counter per refusal reason. */
  readonly counts: Record<string, number>;
  /** Count the refusal and answer it. `cors`: the request's CORS headers. */
  refuse(res: uWS.HttpResponse, st: ReplyState, r: Refusal, cors: Headers): void;
  /** An accepted request; `dropped`: what it held that is taken and not kept, counted as `dropped_<reason>`. */
  accepted(events: number, dropped?: Record<string, number>): void;
}

export function createRefusalCounters(): RefusalCounters {
  const counts: Record<string, number> = { accepted_events: 0, accepted_batches: 0 };
  for (const r of REFUSAL_REASONS) counts[r] = 0;
  return {
    counts,
    refuse(res, st, r, cors) {
      counts[r.reason]++;
      const how: { code?: ErrorCode; status?: 204; close?: true; retryAfterSec?: number } = REFUSALS[r.reason];
      if (how.status === 204) return send(res, st, 204, cors);
      sendError(res, st, how.code!, r.message, cors, { retryAfterSec: r.retryAfterSec ?? how.retryAfterSec, fields: r.fields, close: how.close });
    },
    accepted(events, dropped) {
      counts.accepted_batches++;
      counts.accepted_events += events;
      if (dropped) for (const [reason, n] of Object.entries(dropped)) counts[`dropped_${reason}`] = (counts[`dropped_${reason}`] ?? 0) + n;
    },
  };
}
