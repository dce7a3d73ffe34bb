import { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';

/**
 * Redis fixed-window limiter: counters shared by every edge node. The key carries the window
 * index (epoch-aligned, floor(now / windowMs)), so a new window is a new key and old ones expire
 * on their own. INCR and PEXPIRE run in one Lua script: one round trip, and a key never outlives
 * its window even if a node dies between the two. `hitAll` counts several keys (the edge's
 * key-and-IP and key limits) in one script call.
 *
 * Hits are sent in batches (group commit, as the edge's Kafka hand-off): one script call is out at a
 * time; every hitAll made while it is out, or in the same turn of the event loop, goes in the next
 * one, so concurrent requests share one socket write and one reply instead of paying syscalls each
 * (bench/README.md). An idle limiter sends at once (setImmediate), so a lone request waits no longer.
 * Each hit is still one INCR, counted in Redis in the order of the calls, so the counts stay exact
 * across edges.
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

/** Requests (hitAll calls) per script call at most. */
const MAX_CALLS_PER_SCRIPT = 128;

type LimiterRedis = Redis & { rlHit(...keysThenTtls: Array<string | number>): Promise<number[]> };

export async function createRedisLimiter(url: string, clock: Clock = systemClock, prefix = 'rl'): Promise<RateLimiter> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true }) as LimiterRedis;
  // numberOfKeys is given per call (the first argument), so one script serves any number of keys.
  redis.defineCommand('rlHit', { lua: HIT_SCRIPT });
  await redis.connect();

  interface Queued {
    keys: string[];
    ttls: number[];
    resolve: (counts: number[]) => void;
    reject: (err: unknown) => void;
  }
  let queue: Queued[] = [];
  let scheduled = false;
  let inFlight = false;

  function send(batch: Queued[]): Promise<void> {
    const keys = batch.flatMap((q) => q.keys);
    const ttls = batch.flatMap((q) => q.ttls);
    return redis.rlHit(keys.length, ...keys, ...ttls).then(
      (counts) => {
        let at = 0;
        for (const q of batch) {
          q.resolve(counts.slice(at, at + q.keys.length).map(Number));
          at += q.keys.length;
        }
      },
      (err) => {
        for (const q of batch) q.reject(err);
      },
    );
  }

  function flush() {
    scheduled = false;
    if (inFlight || !queue.length) return;
    // Bounded script calls: Redis runs a script alone, so none holds it for long.
    const batch = queue.length <= MAX_CALLS_PER_SCRIPT ? queue : queue.slice(0, MAX_CALLS_PER_SCRIPT);
    queue = queue.length <= MAX_CALLS_PER_SCRIPT ? [] : queue.slice(MAX_CALLS_PER_SCRIPT);
    inFlight = true;
    void send(batch).finally(() => {
      inFlight = false;
      // What queued while this call was out goes next, together.
      if (queue.length) schedule();
    });
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  }

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
    const counts = await new Promise<number[]>((resolve, reject) => {
      queue.push({ keys, ttls, resolve, reject });
      if (!inFlight) schedule();
    });
    return hits.map((h, i) => {
      const count = counts[i]!;
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
