/**
 * Rate limiter port: sliding windows. No more than `limit` hits are let through in any `windowMs`, wherever
 * that window starts (the rule and its arithmetic: adapters/rate-limit/sliding-window.ts). Adapters: Redis
 * (REDIS_URL; shared by several edge nodes) and in-memory (one node); both refuse at the same moments.
 */
export interface RateDecision {
  /** Whether this key had room for the hit. */
  allowed: boolean;
  /** Hits this key would still let through in its window after this decision (0 when it refused). */
  remaining: number;
  /** Whole seconds until the next hit on this key would be let through; at least 1. Used for Retry-After. */
  retryAfterSec: number;
}

export interface RateHit {
  key: string;
  limit: number;
  windowMs: number;
}

export interface RateLimiter {
  readonly adapter: 'redis' | 'memory';
  /** One hit against `key`, letting `limit` hits through per `windowMs`; a refused hit counts nothing. */
  hit(key: string, limit: number, windowMs: number): Promise<RateDecision>;
  /**
   * One hit against several keys at once (one round trip to Redis), each with its own limit and window; the
   * decisions come back in the same order. The hit counts on every key only if every key had room: a request
   * that one key refuses spends none of the others (an address over its own limit does not spend its
   * project's), and its other keys' decisions say `allowed` with their remaining unchanged.
   */
  hitAll(hits: readonly RateHit[]): Promise<RateDecision[]>;
  close(): Promise<void>;
}
