/**
 * Rate limiter port: fixed-window counters. Adapters: Redis (REDIS_URL; shared by several edge
 * nodes) and in-memory (one node).
 */
export interface RateDecision {
  allowed: boolean;
  /** Hits left in the current window after this one (0 when refused). */
  remaining: number;
  /** Whole seconds until the window resets; at least 1. Used for Retry-After. */
  retryAfterSec: number;
}

export interface RateHit {
  key: string;
  limit: number;
  windowMs: number;
}

export interface RateLimiter {
  readonly adapter: 'redis' | 'memory';
  /** Count one hit against `key`, allowing `limit` hits per `windowMs`. */
  hit(key: string, limit: number, windowMs: number): Promise<RateDecision>;
  /**
   * Count one hit against every key at once (one round trip to Redis), each with its own limit and
   * window; the decisions come back in the same order. Every key counts the hit, allowed or not, as
   * `hit` does.
   */
  hitAll(hits: readonly RateHit[]): Promise<RateDecision[]>;
  close(): Promise<void>;
}
