import { LIMITS } from '../../schemas/limits.ts';

/**
 * When the next attempt is due after a failed one (spec §9: about 10 s, 40 s, 3 min, 11 min,
 * 43 min, then 43 min again, with jitter). Jitter is ±20% so endpoints that failed together do not
 * retry together. A receiver's Retry-After (429/503) wins when it asks for longer, capped at 24 h
 * so a hostile header cannot park a delivery forever.
 */
export const JITTER = 0.2;
export const RETRY_AFTER_CAP_MS = 24 * 60 * 60 * 1000;

/** Base delay after `attempt` (1-based) failed. */
export function baseBackoffMs(attempt: number): number {
  const table = LIMITS.webhook.backoffMs;
  return table[Math.min(Math.max(attempt, 1), table.length) - 1];
}

export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = baseBackoffMs(attempt);
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP date. Undefined when absent or unreadable. */
export function parseRetryAfterMs(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Math.min(Number(v) * 1000, RETRY_AFTER_CAP_MS);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(at - now, 0), RETRY_AFTER_CAP_MS);
}

/** Delay before the next attempt after attempt `attempt` failed with `status` (if any). */
export function nextDelayMs(attempt: number, status: number | undefined, retryAfter: string | undefined, now: number, random?: () => number): number {
  const delay = backoffMs(attempt, random);
  if (status === 429 || status === 503) {
    const asked = parseRetryAfterMs(retryAfter, now);
    if (asked !== undefined && asked > delay) return asked;
  }
  return delay;
}
