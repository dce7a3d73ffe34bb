import { obj } from './item-fields.ts';

/**
 * A Sentry `client_report` item (@sentry/core's client reports, every ~30 s from a browser):
 * `{ timestamp, discarded_events: [{ reason, category, quantity }] }`: what the SDK itself dropped, and why. Nothing
 * of it is kept; its quantities are summed as counters `sdk_discarded_<reason>`, for the reasons the SDK names
 * (EventDropReason), any other as `sdk_discarded_other` (client input never names a counter).
 */
export const SDK_DROP_REASONS = new Set([
  'before_send',
  'callback_error',
  'event_processor',
  'network_error',
  'queue_overflow',
  'ratelimit_backoff',
  'sample_rate',
  'send_error',
  'internal_sdk_error',
  'buffer_overflow',
  'ignored',
  'invalid',
  'no_parent_span',
]);
/** At most this many outcomes of one report are read (an SDK sends one per reason and category). */
const MAX_OUTCOMES = 100;

export function discardedOfClientReport(input: unknown, into: Record<string, number>): void {
  const outcomes = obj(input)?.discarded_events;
  if (!Array.isArray(outcomes)) return;
  for (const raw of outcomes.slice(0, MAX_OUTCOMES)) {
    const o = obj(raw);
    const q = o?.quantity;
    if (!o || typeof q !== 'number' || !Number.isInteger(q) || q <= 0) continue;
    const reason = `sdk_discarded_${typeof o.reason === 'string' && SDK_DROP_REASONS.has(o.reason) ? o.reason : 'other'}`;
    into[reason] = (into[reason] ?? 0) + Math.min(q, 1_000_000);
  }
}
