import type uWS from 'uWebSockets.js';
import type { ErrorBody, ErrorCode } from '../schemas/error-codes.ts';
import { REFUSAL_REASONS, REFUSALS, type RefusalReason } from '../schemas/edge-refusals.ts';
import { send, sendError, type Headers, type ReplyState } from './http/uws-reply.ts';

export { REFUSAL_REASONS, REFUSALS, type RefusalReason } from '../schemas/edge-refusals.ts';

/** A decision not to accept a request, as a value. */
export interface Refusal {
  reason: RefusalReason;
  message: string;
  /** Overrides the table's Retry-After (rate limits and caps know theirs). */
  retryAfterSec?: number;
  fields?: ErrorBody['fields'];
  /** Fields added to the JSON body beside `error` and `message` (a route's callers read their own shape). */
  body?: Record<string, unknown>;
  /** Headers of this refusal's answer, in place of the route's dialect's (Sentry's rate limits by category). */
  headers?: Headers;
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
      sendError(res, st, how.code!, r.message, cors, { retryAfterSec: r.retryAfterSec ?? how.retryAfterSec, fields: r.fields, close: how.close, body: r.body });
    },
    accepted(events, dropped) {
      counts.accepted_batches++;
      counts.accepted_events += events;
      if (dropped) for (const [reason, n] of Object.entries(dropped)) counts[`dropped_${reason}`] = (counts[`dropped_${reason}`] ?? 0) + n;
    },
  };
}
