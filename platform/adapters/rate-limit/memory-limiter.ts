import type { Clock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';

/**
 * In-memory fixed-window limiter: one node's counters. Windows are aligned to the epoch
 * (window index = floor(now / windowMs)), the same arithmetic as the Redis limiter, so both
 * adapters refuse and reset at the same moments.
 *
 * Memory stays bounded by the keys active in their current window: expired windows are swept
 * every SWEEP_EVERY hits (amortised, no timer to keep a process alive).
 */
const SWEEP_EVERY = 1_000;

interface Counter {
  count: number;
  /** Epoch ms at which this window ends. */
  resetAt: number;
}

export function createMemoryLimiter(clock: Clock): RateLimiter & { readonly size: number } {
  const counters = new Map<string, Counter>();
  let hitsSinceSweep = 0;

  function sweep(now: number): void {
    for (const [k, c] of counters) if (c.resetAt <= now) counters.delete(k);
  }

  function hitNow(key: string, limit: number, windowMs: number): RateDecision {
    const now = clock.now();
    if (++hitsSinceSweep >= SWEEP_EVERY) {
      hitsSinceSweep = 0;
      sweep(now);
    }
    const windowIndex = Math.floor(now / windowMs);
    const mapKey = `${windowMs}:${key}`;
    const resetAt = (windowIndex + 1) * windowMs;
    let c = counters.get(mapKey);
    if (!c || c.resetAt !== resetAt) {
      c = { count: 0, resetAt };
      counters.set(mapKey, c);
    }
    c.count++;
    const retryAfterSec = Math.max(1, Math.ceil((resetAt - now) / 1000));
    if (c.count > limit) return { allowed: false, remaining: 0, retryAfterSec };
    return { allowed: true, remaining: limit - c.count, retryAfterSec };
  }

  return {
    adapter: 'memory',
    /** Counters held right now (for tests of the sweep). */
    get size() {
      return counters.size;
    },
    async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
      return hitNow(key, limit, windowMs);
    },
    async hitAll(hits: readonly RateHit[]): Promise<RateDecision[]> {
      return hits.map((h) => hitNow(h.key, h.limit, h.windowMs));
    },
    async close() {
      counters.clear();
    },
  };
}
