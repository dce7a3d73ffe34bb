import type { RateHit } from '../../platform/ports/rate-limiter.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { UNKEPT_CATEGORIES, type ItemKind } from './envelope-items.ts';

/**
 * The rate limits of an envelope's kinds of items, and how Sentry's SDKs are told about them. Pure.
 *
 * Each kind an envelope holds is limited on its own (its own keys, one RateLimiter.hitAll per kind, so one kind's
 * refusal spends nothing of another's): errors by the error-ingest limits (and the monthly cap, applied by the route),
 * sessions, check-ins and feedback by theirs (schemas/limits.ts). Client reports are never limited.
 *
 * `X-Sentry-Rate-Limits` (@sentry/core utils/ratelimit.js updateRateLimits, read on every answer, 2xx included):
 * comma-separated `retry_after:categories:scope:reason`, categories `;`-separated. An empty category list would stop
 * the SDK sending *everything*, so every limit here names its categories: a limited error budget never silences
 * sessions, and the reverse. Every answer also carries a long limit on the categories of the item types this service
 * never keeps (UNKEPT_CATEGORIES), so a fresh SDK (each page load) learns from its first answer to stop sending them.
 */
const MINUTE_MS = 60_000;

export function kindLimits(kind: Exclude<ItemKind, 'errors'>, keyId: string, ip: string): RateHit[] {
  const rate = { sessions: LIMITS.sessionIngestRate, monitors: LIMITS.checkInIngestRate, feedback: LIMITS.feedbackIngestRate }[kind];
  return [
    { key: `${kind}:ki:${keyId}:${ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
    { key: `${kind}:k:${keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
  ];
}

export interface CategoryLimit {
  retryAfterSec: number;
  categories: Iterable<string>;
  scope: 'key' | 'project' | 'organization';
  reason: string;
}

/**
 * The categories named when a kind is limited: those of the items it held, as the SDK files them, and for errors
 * `error;default` always (Sentry's two event categories).
 */
export function categoriesOfLimited(kind: ItemKind, held: Iterable<string>): string[] {
  return [...new Set(kind === 'errors' ? ['error', 'default', ...held] : held)];
}

export const UNKEPT_LIMIT: CategoryLimit = {
  retryAfterSec: LIMITS.sentryIngest.unkeptRetryAfterSec,
  categories: UNKEPT_CATEGORIES,
  scope: 'organization',
  reason: 'not_kept',
};

export function rateLimitsHeader(limits: CategoryLimit[]): string {
  return limits.map((l) => `${Math.max(1, Math.ceil(l.retryAfterSec))}:${[...l.categories].join(';')}:${l.scope}:${l.reason}`).join(', ');
}

/** The header every envelope answer carries when nothing of it was limited. */
export const UNKEPT_HEADER = rateLimitsHeader([UNKEPT_LIMIT]);
