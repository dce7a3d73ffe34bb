import { Redis } from 'ioredis';
import { systemClock, type Clock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';
import { secondsUntil, windowSlots } from './sliding-window.ts';

/**
 * Redis sliding-window limiter: counts shared by every edge node. The rule and its arithmetic are in
 * sliding-window.ts; the script below takes the same steps in the same order as the memory limiter, so both
 * adapters refuse at the same moments. A key's window is one hash (`t` the total, `l` the newest slot, one field
 * per slot with hits) that expires on its own once its newest slot stops counting. One script call runs each
 * request's steps atomically: a request's keys (the edge's key-and-IP and key limits) are checked together and
 * counted only if all have room.
 *
 * Hits are sent in batches (group commit, as the edge's Kafka hand-off): one script call is out at a
 * time; every hitAll made while it is out, or in the same turn of the event loop, goes in the next
 * one, so concurrent requests share one socket write and one reply instead of paying syscalls each
 * (bench/README.md). An idle limiter sends at once (setImmediate), so a lone request waits no longer.
 * Requests are decided in Redis in the order of the calls, so the counts stay exact across edges.
 *
 * The slot comes from this node's clock (a Clock port, so tests can move time); edge nodes are expected to be
 * NTP-synchronised. A key's time never goes back: a hit from a node whose clock lags is counted in the key's
 * newest slot (it then counts a little longer), never in one already dropped.
 */
const HIT_SCRIPT = `
-- KEYS: every key of every request, in order. ARGV: per request its key count n and its time (epoch ms), then
-- per key: limit, slot, span, slotMs. Returns per key: room (1/0), remaining, retry slot (0: a hit fits now).
local out = {}
local ki, ai = 1, 1
while ai <= #ARGV do
  local n, now = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1])
  ai = ai + 2
  local req, all = {}, true
  -- 1. Bring every key's window to now (drop the slots that no longer count), and see whether each has room.
  for j = 1, n do
    local key = KEYS[ki]
    local limit, slot, span, slotMs = tonumber(ARGV[ai]), tonumber(ARGV[ai + 1]), tonumber(ARGV[ai + 2]), tonumber(ARGV[ai + 3])
    ki, ai = ki + 1, ai + 4
    local st = redis.call('HMGET', key, 't', 'l')
    local total, last = tonumber(st[1]) or 0, tonumber(st[2])
    if last and slot <= last then
      slot = last
    elseif last and slot - last > span then
      redis.call('DEL', key)
      total = 0
    elseif last then
      for s = last - span, slot - span - 1 do
        local c = redis.call('HGET', key, s)
        if c then
          total = total - tonumber(c)
          redis.call('HDEL', key, s)
        end
      end
    end
    -- moved: the key's newest slot changes (or the key is new), so its total, newest slot and expiry are written.
    req[j] = { key = key, limit = limit, slot = slot, span = span, slotMs = slotMs, total = total, room = total < limit, moved = last ~= slot }
    if not req[j].room then all = false end
  end
  -- 2. Count the hit on every key only when all had room.
  for _, r in ipairs(req) do
    if all then
      redis.call('HINCRBY', r.key, r.slot, 1)
      r.total = r.total + 1
      if r.moved then
        redis.call('HSET', r.key, 't', r.total, 'l', r.slot)
        -- Until the newest slot stops counting, and a second more for another node's slower clock.
        redis.call('PEXPIRE', r.key, (r.slot + r.span + 1) * r.slotMs - now + 1000)
      else
        -- The same newest slot: nothing was dropped and the expiry stands (the common case under load).
        redis.call('HINCRBY', r.key, 't', 1)
      end
    elseif r.total == 0 then
      redis.call('DEL', r.key)
    elseif r.moved then
      redis.call('HSET', r.key, 't', r.total, 'l', r.slot)
    end
    -- 3. Each key's decision: the retry slot is where enough of the oldest hits have left for one more.
    local retry, need = 0, r.total - r.limit + 1
    if need > 0 then
      retry = r.slot + r.span + 1
      local fields = {}
      for s = r.slot - r.span, r.slot do fields[#fields + 1] = s end
      local counts = redis.call('HMGET', r.key, unpack(fields))
      local released = 0
      for i, c in ipairs(counts) do
        released = released + (tonumber(c) or 0)
        if released >= need then
          retry = (r.slot - r.span + i - 1) + r.span + 1
          break
        end
      end
    end
    out[#out + 1] = r.room and 1 or 0
    out[#out + 1] = math.max(0, r.limit - r.total)
    out[#out + 1] = retry
  end
end
return out
`;

/** Requests (hitAll calls) per script call at most. */
const MAX_CALLS_PER_SCRIPT = 128;

type LimiterRedis = Redis & { rlHit(...keysThenArgs: Array<string | number>): Promise<number[]> };

export async function createRedisLimiter(url: string, clock: Clock = systemClock, prefix = 'rl'): Promise<RateLimiter> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true }) as LimiterRedis;
  // numberOfKeys is given per call (the first argument), so one script serves any number of keys.
  redis.defineCommand('rlHit', { lua: HIT_SCRIPT });
  await redis.connect();

  interface Queued {
    keys: string[];
    /** The request's arguments: key count, time, then limit, slot, span, slotMs per key. */
    args: number[];
    /** Room, remaining and retry slot per key. */
    resolve: (replies: number[]) => void;
    reject: (err: unknown) => void;
  }
  let queue: Queued[] = [];
  let scheduled = false;
  let inFlight = false;

  function send(batch: Queued[]): Promise<void> {
    const keys = batch.flatMap((q) => q.keys);
    const args = batch.flatMap((q) => q.args);
    return redis.rlHit(keys.length, ...keys, ...args).then(
      (replies) => {
        let at = 0;
        for (const q of batch) {
          q.resolve(replies.slice(at, at + 3 * q.keys.length).map(Number));
          at += 3 * q.keys.length;
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
    const args: number[] = [hits.length, now];
    const slots = hits.map((h) => windowSlots(h.windowMs));
    hits.forEach((h, i) => {
      const { slotMs, span } = slots[i]!;
      keys.push(`${prefix}:${h.windowMs}:${h.key}`);
      args.push(h.limit, Math.floor(now / slotMs), span, slotMs);
    });
    const replies = await new Promise<number[]>((resolve, reject) => {
      queue.push({ keys, args, resolve, reject });
      if (!inFlight) schedule();
    });
    return hits.map((_, i) => ({
      allowed: replies[3 * i] === 1,
      remaining: replies[3 * i + 1]!,
      retryAfterSec: secondsUntil(replies[3 * i + 2]!, slots[i]!.slotMs, now),
    }));
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
