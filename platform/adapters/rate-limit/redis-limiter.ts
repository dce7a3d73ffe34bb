import { Redis, type RedisOptions } from 'ioredis';
import { systemClock, type Clock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';

/**
 * Redis fixed-window limiter: counters shared by every edge node. The key carries the window
 * index (epoch-aligned, floor(now / windowMs)), so a new window is a new key and old ones expire
 * on their own. INCR and PEXPIRE run in one Lua script: one round trip, and a key never outlives
 * its window even if a node dies between the two. `hitAll` counts several keys (the edge's
 * key-and-IP and key limits) in one script call.
 *
 * Commands issued in the same tick go out in one write (ioredis auto-pipelining): under load the
 * edge's concurrent requests share socket writes instead of paying a syscall each (bench/README.md).
 *
 * The window index comes from this node's clock (a Clock port, so tests can move time); edge nodes
 * are expected to be NTP-synchronised, and a skew only shifts which window a hit lands in.
 */
const HIT_SCRIPT = `
local counts = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 then redis.call('PEXPIRE', key, ARGV[i]) end
  counts[i] = n
end
return counts
`;

type LimiterRedis = Redis & { rlHit(...keysThenTtls: Array<string | number>): Promise<number[]> };

export async function createRedisLimiter(url: string, clock: Clock = systemClock, prefix = 'rl', options: RedisOptions = {}): Promise<RateLimiter> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true, ...options }) as LimiterRedis;
  // numberOfKeys is given per call (the first argument), so one script serves any number of keys.
  redis.defineCommand('rlHit', { lua: HIT_SCRIPT });
  await redis.connect();

  async function hitAll(hits: readonly RateHit[]): Promise<RateDecision[]> {
    if (!hits.length) return [];
    const now = clock.now();
    const keys: string[] = [];
    const ttls: number[] = [];
    const retryAfter: number[] = [];
    for (const h of hits) {
      const windowIndex = Math.floor(now / h.windowMs);
      const resetAt = (windowIndex + 1) * h.windowMs;
      keys.push(`${prefix}:${h.windowMs}:${windowIndex}:${h.key}`);
      // The expiry runs past the window end by a little so a slow clock on another node still finds it.
      ttls.push(resetAt - now + 1_000);
      retryAfter.push(Math.max(1, Math.ceil((resetAt - now) / 1000)));
    }
    const counts = await redis.rlHit(keys.length, ...keys, ...ttls);
    return hits.map((h, i) => {
      const count = Number(counts[i]);
      const retryAfterSec = retryAfter[i]!;
      if (count > h.limit) return { allowed: false, remaining: 0, retryAfterSec };
      return { allowed: true, remaining: h.limit - count, retryAfterSec };
    });
  }

  return {
    adapter: 'redis',
    async hit(key: string, limit: number, windowMs: number): Promise<RateDecision> {
      return (await hitAll([{ key, limit, windowMs }]))[0]!;
    },
    hitAll,
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
