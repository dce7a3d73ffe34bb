import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.ts';
import type { RateLimiter } from '../../ports/rate-limiter.ts';
import { createMemoryLimiter } from './memory-limiter.ts';
import { createRedisLimiter } from './redis-limiter.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';

const MINUTE = 60_000;

/** The contract every rate limiter adapter keeps. Windows are epoch-aligned; the ManualClock starts on a minute. */
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

  it('allows up to the limit in a window, counting remaining down, then refuses', async () => {
    const { limiter, key } = await fresh();
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.hit(key, 3, MINUTE));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
  });

  it('says how long until the window resets, in whole seconds within (0, window]', async () => {
    const { clock, limiter, key } = await fresh();
    clock.advance(15_500);
    await limiter.hit(key, 1, MINUTE);
    const refused = await limiter.hit(key, 1, MINUTE);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSec).toBe(45);
    clock.advance(44_000);
    const last = await limiter.hit(key, 1, MINUTE);
    expect(last.allowed).toBe(false);
    expect(last.retryAfterSec).toBe(1);
  });

  it('a new window starts from zero', async () => {
    const { clock, limiter, key } = await fresh();
    await limiter.hit(key, 2, MINUTE);
    await limiter.hit(key, 2, MINUTE);
    expect((await limiter.hit(key, 2, MINUTE)).allowed).toBe(false);
    clock.advance(MINUTE);
    const next = await limiter.hit(key, 2, MINUTE);
    expect(next).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('hitAll counts one hit against every key, each with its own limit, decisions in order', async () => {
    const { limiter, key } = await fresh();
    const both = () =>
      limiter.hitAll([
        { key: `${key}-narrow`, limit: 1, windowMs: MINUTE },
        { key: `${key}-wide`, limit: 3, windowMs: MINUTE },
      ]);
    expect(await both()).toEqual([
      { allowed: true, remaining: 0, retryAfterSec: 60 },
      { allowed: true, remaining: 2, retryAfterSec: 60 },
    ]);
    // The narrow key refuses, and the wide one still counts the hit (as two hit() calls would).
    expect((await both()).map((d) => [d.allowed, d.remaining])).toEqual([
      [false, 0],
      [true, 1],
    ]);
    expect(await limiter.hit(`${key}-wide`, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 0 });
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

  it('forgets expired windows, so memory does not grow with every key ever seen', async () => {
    const clock = new ManualClock();
    const limiter = createMemoryLimiter(clock);
    for (let i = 0; i < 5_000; i++) await limiter.hit(`ip-${i}`, 10, MINUTE);
    expect(limiter.size).toBe(5_000);
    clock.advance(MINUTE);
    for (let i = 0; i < 1_000; i++) await limiter.hit('steady', 10_000, MINUTE);
    expect(limiter.size).toBeLessThanOrEqual(1);
    await limiter.close();
  });
});

describeWith(['redis'], 'rate limiter contract: redis', () => {
  limiterContract((clock) => createRedisLimiter(backendUrl('redis')!, clock));

  it('two limiters on the same Redis share counts, as several edge nodes do', async () => {
    const clock = new ManualClock();
    const a = await createRedisLimiter(backendUrl('redis')!, clock);
    const b = await createRedisLimiter(backendUrl('redis')!, clock);
    const key = `k-${randomUUID()}`;
    try {
      expect(await a.hit(key, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await b.hit(key, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await a.hit(key, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 0 });
      expect((await b.hit(key, 3, MINUTE)).allowed).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('requests of one event-loop turn go to Redis together, and each still gets its own exact count', async () => {
    const clock = new ManualClock();
    const limiter = await createRedisLimiter(backendUrl('redis')!, clock, `rl-${randomUUID()}`);
    const { Redis } = await import('ioredis');
    const redis = new Redis(backendUrl('redis')!);
    try {
      // 300 requests, each from its own macrotask (as uWS delivers them), more than one script call holds;
      // all share the key limit of 250, half of them also share a key-and-IP limit of 100.
      const decisions = await Promise.all(
        Array.from(
          { length: 300 },
          (_, i) =>
            new Promise<Awaited<ReturnType<typeof limiter.hitAll>>>((resolve, reject) => {
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
      const byKey = decisions.map((d) => d[0]!);
      expect(byKey.filter((d) => d.allowed)).toHaveLength(250);
      // Every count from 1 to 250 handed out exactly once: remaining 249..0.
      expect(
        byKey
          .filter((d) => d.allowed)
          .map((d) => d.remaining)
          .sort((a, b) => a - b),
      ).toEqual(Array.from({ length: 250 }, (_, i) => i));
      const shared = decisions.filter((_, i) => i % 2).map((d) => d[1]!);
      expect(shared.filter((d) => d.allowed)).toHaveLength(100);
      expect(decisions.filter((_, i) => i % 2 === 0).every((d) => d[1]!.allowed && d[1]!.remaining === 99)).toBe(true);
      const stored = await redis.keys(`rl-*:${MINUTE}:*:k`);
      expect(Number(await redis.get(stored[0]!))).toBe(300);
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
      const later: Array<Promise<unknown>> = [];
      // Five requests, each in its own later turn of the event loop, while the first call is out.
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setImmediate(r));
        later.push(limiter.hit('k', 100, MINUTE));
      }
      const counts = [await first, ...((await Promise.all(later)) as Array<{ remaining: number }>)].map((d) => (d as { remaining: number }).remaining);
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

  it('a window’s key expires in Redis on its own', async () => {
    const clock = new ManualClock();
    const limiter = await createRedisLimiter(backendUrl('redis')!, clock, `rl-${randomUUID()}`);
    const { Redis } = await import('ioredis');
    const redis = new Redis(backendUrl('redis')!);
    try {
      await limiter.hit('k', 5, MINUTE);
      const keys = await redis.keys('rl-*:k');
      const ttls = await Promise.all(keys.map((k) => redis.pttl(k)));
      expect(ttls.length).toBeGreaterThan(0);
      for (const ttl of ttls) {
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(MINUTE + 1_000);
      }
    } finally {
      redis.disconnect();
      await limiter.close();
    }
  });
});
