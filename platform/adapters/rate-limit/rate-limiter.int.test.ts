import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.ts';
import type { RateDecision, RateHit, RateLimiter } from '../../ports/rate-limiter.ts';
import { createMemoryLimiter } from './memory-limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';

const MINUTE = 60_000;

/**
 * The contract every rate limiter adapter keeps: no more than `limit` hits through in any `windowMs`, wherever the
 * window starts, counted in slots of 1/60 of the window (a hit stops counting between one window and one window
 * plus a slot after it was made). The ManualClock starts on a minute.
 */
function limiterContract(make: (clock: ManualClock) => Promise<RateLimiter>) {
  const opened: RateLimiter[] = [];
  const fresh = async () => {
    const clock = new ManualClock();
    const limiter = await make(clock);
    opened.push(limiter);
    return { clock, limiter, key: `k-${randomUUID()}` };
  };
  afterAll(async () => {
    for (const l of opened) await l.close();
  });

  it('allows up to the limit, counting remaining down, then refuses', async () => {
    const { limiter, key } = await fresh();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.hit(key, 3, MINUTE));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
  });

  it('the attacker: a burst just before a clock minute and one just after get no more than the limit through', async () => {
    const { clock, limiter, key } = await fresh();
    const burst = async (n: number) => {
      const out: RateDecision[] = [];
      for (let i = 0; i < n; i++) out.push(await limiter.hit(key, 30, MINUTE));
      return out;
    };
    clock.advance(59_900); // hh:00:59.900
    const before = await burst(40);
    expect(before.filter((d) => d.allowed)).toHaveLength(30);
    clock.advance(200); // hh:01:00.100: a fixed window per clock minute would let 30 more through here
    const after = await burst(40);
    expect(after.filter((d) => d.allowed)).toHaveLength(0);
    // The first burst stops counting at hh:02:00 (its slot, hh:00:59, plus one window): 59.9 s from now.
    expect(after.map((d) => d.retryAfterSec)).toEqual(Array(40).fill(60));
    clock.advance(59_000);
    expect(await limiter.hit(key, 30, MINUTE)).toMatchObject({ allowed: false, retryAfterSec: 1 });
    clock.advance(1_000); // Retry-After's 60 s after the refusals
    expect(await limiter.hit(key, 30, MINUTE)).toMatchObject({ allowed: true, remaining: 29 });
  });

  it('hammered in bursts for three windows: never more than the limit in any window, and every Retry-After is when the next hit gets through', async () => {
    const { clock, limiter, key } = await fresh();
    const limit = 30;
    const step = 250;
    clock.advance(MINUTE - 1_000); // start a second before a clock minute
    const start = clock.now();
    const end = start + 3 * MINUTE;
    const through: number[] = [];
    const refused: Array<{ at: number; retryAfterSec: number }> = [];
    for (let i = 0; clock.now() < end; i++, clock.advance(step)) {
      // Mostly one hit per step, with bursts of 12 every 7th step and 40 at each clock minute.
      const n = clock.now() % MINUTE === 0 ? 40 : i % 7 === 0 ? 12 : 1;
      for (let j = 0; j < n; j++) {
        const d = await limiter.hit(key, limit, MINUTE);
        if (d.allowed) through.push(clock.now());
        else refused.push({ at: clock.now(), retryAfterSec: d.retryAfterSec });
      }
    }
    // Any window of a minute, wherever it starts: it is enough to start one at every hit let through.
    for (const a of through) expect(through.filter((t) => t >= a && t < a + MINUTE).length).toBeLessThanOrEqual(limit);
    expect(through.length).toBeGreaterThanOrEqual(2 * limit); // and the limit is not refusing everything
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      if (r.at + r.retryAfterSec * 1000 + step > end) continue;
      const next = through.find((t) => t > r.at)!;
      // Not sooner than said (to the second), and a client that waits as told gets in at its next try.
      expect(next).toBeGreaterThan(r.at + (r.retryAfterSec - 1) * 1000);
      expect(next).toBeLessThan(r.at + r.retryAfterSec * 1000 + step);
    }
  });

  it('a hit stops counting one window after it was made, rounded up to its slot (1/60 of the window)', async () => {
    const { clock, limiter, key } = await fresh();
    clock.advance(500);
    expect(await limiter.hit(key, 2, MINUTE)).toMatchObject({ allowed: true, remaining: 1, retryAfterSec: 1 });
    clock.advance(30_000); // :30.5
    // Remaining 0: the next hit fits once the first one's slot (:00) stops counting, at 1:01.
    expect(await limiter.hit(key, 2, MINUTE)).toEqual({ allowed: true, remaining: 0, retryAfterSec: 31 });
    clock.advance(9_500); // :40
    expect(await limiter.hit(key, 2, MINUTE)).toEqual({ allowed: false, remaining: 0, retryAfterSec: 21 });
    clock.advance(20_500); // 1:00.5, one minute after the first hit: it still counts, until 1:01
    expect(await limiter.hit(key, 2, MINUTE)).toEqual({ allowed: false, remaining: 0, retryAfterSec: 1 });
    clock.advance(500); // 1:01
    expect(await limiter.hit(key, 2, MINUTE)).toEqual({ allowed: true, remaining: 0, retryAfterSec: 30 });
    clock.advance(MINUTE + 1_000); // every hit has left
    expect(await limiter.hit(key, 2, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('hitAll decides each key, and counts the hit on every key only when all had room', async () => {
    const { limiter, key } = await fresh();
    const both = () =>
      limiter.hitAll([
        { key: `${key}-narrow`, limit: 1, windowMs: MINUTE },
        { key: `${key}-wide`, limit: 3, windowMs: MINUTE },
      ]);
    expect(await both()).toEqual([
      { allowed: true, remaining: 0, retryAfterSec: 61 },
      { allowed: true, remaining: 2, retryAfterSec: 1 },
    ]);
    // The narrow key refuses, so the wide one does not count the hit: a refused request spends nothing.
    expect(await both()).toEqual([
      { allowed: false, remaining: 0, retryAfterSec: 61 },
      { allowed: true, remaining: 2, retryAfterSec: 1 },
    ]);
    expect(await limiter.hit(`${key}-wide`, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
    expect((await limiter.hit(`${key}-narrow`, 1, MINUTE)).allowed).toBe(false);
    expect(await limiter.hitAll([])).toEqual([]);
  });

  it('keys are independent, and so are windows of different lengths for one key', async () => {
    const { limiter, key } = await fresh();
    await limiter.hit(key, 1, MINUTE);
    expect((await limiter.hit(key, 1, MINUTE)).allowed).toBe(false);
    expect((await limiter.hit(`${key}-other`, 1, MINUTE)).allowed).toBe(true);
    expect((await limiter.hit(key, 1, 10 * MINUTE)).allowed).toBe(true);
  });
}

describe('rate limiter contract: memory', () => {
  limiterContract(async (clock) => createMemoryLimiter(clock));

  it('forgets keys whose hits have all left their window, so memory does not grow with every key ever seen', async () => {
    const clock = new ManualClock();
    const limiter = createMemoryLimiter(clock);
    for (let i = 0; i < 5_000; i++) await limiter.hit(`ip-${i}`, 10, MINUTE);
    expect(limiter.size).toBe(5_000);
    clock.advance(MINUTE / 2);
    for (let i = 0; i < 1_000; i++) await limiter.hit('steady', 10_000, MINUTE);
    expect(limiter.size).toBe(5_001); // half a minute on, every key still counts
    clock.advance(MINUTE + 1_000);
    for (let i = 0; i < 1_000; i++) await limiter.hit('steady', 10_000, MINUTE);
    expect(limiter.size).toBe(1);
    // A request refused by one key leaves no window behind for its fresh keys.
    await limiter.hitAll([
      { key: 'steady', limit: 1, windowMs: MINUTE },
      { key: 'fresh', limit: 5, windowMs: MINUTE },
    ]);
    expect(limiter.size).toBe(1);
    await limiter.close();
  });
});

describeWith(['redis'], 'rate limiter contract: redis', () => {
  limiterContract((clock) => createRedisLimiter(backendUrl('redis')!, clock, `rl-${randomUUID()}`));

  it('decides exactly as the memory limiter, hit for hit, on a long mixed run', async () => {
    const clock = new ManualClock();
    const memory = createMemoryLimiter(clock);
    const redis = await createRedisLimiter(backendUrl('redis')!, clock, `rl-${randomUUID()}`);
    // A fixed pseudo-random run (a linear congruential generator): keys, limits, windows of lengths that are and
    // are not multiples of 60 ms, pauses longer than a window.
    let seed = 36;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const windows = [MINUTE, 10_000, 7_000, 1_000];
    try {
      for (let i = 0; i < 1_500; i++) {
        clock.advance(next(10) === 0 ? next(70_000) : next(800));
        const hits: RateHit[] = Array.from({ length: 1 + next(3) }, () => ({ key: `k${next(4)}`, limit: 1 + next(8), windowMs: windows[next(4)]! }));
        const keys = new Set(hits.map((h) => `${h.windowMs}:${h.key}`));
        if (keys.size < hits.length) hits.length = 1; // one key twice in a request is not a caller's case
        const [m, r] = await Promise.all([memory.hitAll(hits), redis.hitAll(hits)]);
        expect({ i, r }).toEqual({ i, r: m });
      }
    } finally {
      await memory.close();
      await redis.close();
    }
  });

  it('two limiters on the same Redis share counts, as several edge nodes do', async () => {
    const clock = new ManualClock();
    const prefix = `rl-${randomUUID()}`;
    const a = await createRedisLimiter(backendUrl('redis')!, clock, prefix);
    const b = await createRedisLimiter(backendUrl('redis')!, clock, prefix);
    try {
      expect(await a.hit('k', 3, MINUTE)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await b.hit('k', 3, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await a.hit('k', 3, MINUTE)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await b.hit('k', 3, MINUTE)).allowed).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a node whose clock lags counts in the key’s newest slot, never in one already dropped', async () => {
    const ahead = new ManualClock();
    const behind = new ManualClock();
    const prefix = `rl-${randomUUID()}`;
    const a = await createRedisLimiter(backendUrl('redis')!, ahead, prefix);
    const b = await createRedisLimiter(backendUrl('redis')!, behind, prefix);
    try {
      ahead.advance(3 * MINUTE);
      expect(await a.hit('k', 2, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
      // Two minutes behind: its hit still counts against the same window, and leaves with the newest slot.
      expect(await b.hit('k', 2, MINUTE)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await a.hit('k', 2, MINUTE)).allowed).toBe(false);
      ahead.advance(MINUTE + 1_000);
      expect(await a.hit('k', 2, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('requests of one event-loop turn go to Redis together, and each still gets its own exact count', async () => {
    const clock = new ManualClock();
    const prefix = `rl-${randomUUID()}`;
    const limiter = await createRedisLimiter(backendUrl('redis')!, clock, prefix);
    const { Redis } = await import('ioredis');
    const redis = new Redis(backendUrl('redis')!);
    try {
      // 300 requests, each from its own macrotask (as uWS delivers them), more than one script call holds;
      // all share the key limit of 250, half of them also share a key-and-IP limit of 100.
      const decisions = await Promise.all(
        Array.from(
          { length: 300 },
          (_, i) =>
            new Promise<RateDecision[]>((resolve, reject) => {
              setImmediate(() => {
                const hits = [
                  { key: 'k', limit: 250, windowMs: MINUTE },
                  { key: i % 2 ? 'k-ip-a' : `k-ip-${i}`, limit: 100, windowMs: MINUTE },
                ];
                limiter.hitAll(hits).then(resolve, reject);
              });
            }),
        ),
      );
      const through = decisions.filter((d) => d.every((k) => k.allowed));
      // 150 requests with an address of their own, and the first 100 of the shared address: 250, the key's limit.
      expect(through).toHaveLength(250);
      // Every count from 1 to 250 handed out exactly once: remaining 249..0.
      expect(through.map((d) => d[0]!.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 250 }, (_, i) => i));
      expect(decisions.filter((_, i) => i % 2).filter((d) => d.every((k) => k.allowed))).toHaveLength(100);
      expect(decisions.filter((_, i) => i % 2 === 0).every((d) => d[1]!.allowed && d[1]!.remaining === 99)).toBe(true);
      // The 50 refused requests counted on no key.
      expect(Number(await redis.hget(`${prefix}:${MINUTE}:k`, 't'))).toBe(250);
      expect(Number(await redis.hget(`${prefix}:${MINUTE}:k-ip-a`, 't'))).toBe(100);
    } finally {
      redis.disconnect();
      await limiter.close();
    }
  });

  it('requests made while a script call is out wait for it and then go together in one call', async () => {
    const clock = new ManualClock();
    const prefix = `rl-${randomUUID()}`;
    const limiter = await createRedisLimiter(backendUrl('redis')!, clock, prefix);
    const { Redis } = await import('ioredis');
    const busy = new Redis(backendUrl('redis')!);
    const watcher = new Redis(backendUrl('redis')!);
    const monitor = await watcher.monitor();
    let calls = 0;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval/i.test(args[0] ?? '') && args.some((a) => a.startsWith(prefix))) calls++;
    });
    try {
      // Keep Redis busy (~tens of ms) so the first call stays out while the others arrive.
      const slow = busy.eval('local i = 0 while i < 3000000 do i = i + 1 end return i', 0);
      await new Promise((r) => setTimeout(r, 5));
      const first = limiter.hit('k', 100, MINUTE);
      const later: Array<Promise<RateDecision>> = [];
      // Five requests, each in its own later turn of the event loop, while the first call is out.
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setImmediate(r));
        later.push(limiter.hit('k', 100, MINUTE));
      }
      const counts = [await first, ...(await Promise.all(later))].map((d) => d.remaining);
      await slow;
      expect(counts.sort((a, b) => b - a)).toEqual([99, 98, 97, 96, 95, 94]);
      await new Promise((r) => setTimeout(r, 50)); // the monitor's lines trail the replies
      expect(calls).toBe(2);
    } finally {
      monitor.disconnect();
      watcher.disconnect();
      busy.disconnect();
      await limiter.close();
    }
  });

  it('a key expires in Redis on its own once its newest hit stops counting, and a key that counted nothing is not kept', async () => {
    const clock = new ManualClock();
    const prefix = `rl-${randomUUID()}`;
    const limiter = await createRedisLimiter(backendUrl('redis')!, clock, prefix);
    const { Redis } = await import('ioredis');
    const redis = new Redis(backendUrl('redis')!);
    try {
      await limiter.hit('k', 1, MINUTE);
      const ttl = await redis.pttl(`${prefix}:${MINUTE}:k`);
      expect(ttl).toBeGreaterThan(MINUTE);
      expect(ttl).toBeLessThanOrEqual(MINUTE + 1_000 + 1_000); // the window, its slot, a second for clock skew
      // Refused by k: the fresh key counted nothing and is not left behind (without an expiry).
      await limiter.hitAll([
        { key: 'k', limit: 1, windowMs: MINUTE },
        { key: 'fresh', limit: 5, windowMs: MINUTE },
      ]);
      expect(await redis.exists(`${prefix}:${MINUTE}:fresh`)).toBe(0);
    } finally {
      redis.disconnect();
      await limiter.close();
    }
  });
});
