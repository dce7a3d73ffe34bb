import { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../clock.ts';
import type { RateDecision, RateLimiter } from '../../ports/rate-limiter.ts';

/**
 * Redis fixed-window limiter: counters shared by every edge node. The key carries the window
 * index (epoch-aligned, floor(now / windowMs)), so a new window is a new key and old ones expire
 * on their own. INCR and PEXPIRE run in one Lua script: one round trip, and a key never outlives
 * its window even if a node dies between the two.
 *
 * The window index comes from this node's clock (a Clock port, so tests can move time); edge nodes
 * are expected to be NTP-synchronised, and a skew only shifts which window a hit lands in.
 */
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

type LimiterRedis = Redis & { rlHit(key: string, ttlMs: number): Promise<number> };

export async function createRedisLimiter(url: string, clock: Clock = systemClock, prefix = 'rl'): Promise<RateLimiter> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true }) as LimiterRedis;
  redis.defineCommand('rlHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  await redis.connect();

  return {
    adapter: 'redis',
    async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
      const now = clock.now();
      const windowIndex = Math.floor(now / windowMs);
      const resetAt = (windowIndex + 1) * windowMs;
      // The expiry runs past the window end by a little so a slow clock on another node still finds it.
      const count = await redis.rlHit(`${prefix}:${windowMs}:${windowIndex}:${key}`, resetAt - now + 1_000);
      const retryAfterSec = Math.max(1, Math.ceil((resetAt - now) / 1000));
      if (count > limit) return { allowed: false, remaining: 0, retryAfterSec };
      return { allowed: true, remaining: limit - count, retryAfterSec };
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
