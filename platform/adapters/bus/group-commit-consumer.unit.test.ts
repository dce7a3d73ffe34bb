import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import type { ConsumedMessage } from '../../ports/bus.ts';
import { GroupCommitConsumer, type PartitionOffset } from './group-commit-consumer.ts';

const log = pino({ level: 'silent' });
const noHeartbeat = async () => undefined;

function msgs(partition: number, from: number, n: number, bytes = 10, topic = 't'): ConsumedMessage[] {
  return Array.from({ length: n }, (_, i) => ({ topic, partition, offset: String(from + i), value: Buffer.alloc(bytes, 97) }));
}

/** A handler that blocks each call until released, recording what it was given. */
function gatedHandler() {
  const calls: ConsumedMessage[][] = [];
  const gates: Array<() => void> = [];
  let failuresLeft = 0;
  let open = false;
  return {
    calls,
    /** Let this and every later call through at once. */
    open() {
      open = true;
      while (gates.length) gates.shift()!();
    },
    failNext(n: number) {
      failuresLeft = n;
    },
    release() {
      gates.shift()?.();
    },
    waiting: () => gates.length,
    handler: async (batch: ConsumedMessage[]) => {
      calls.push(batch);
      if (!open) await new Promise<void>((r) => gates.push(r));
      if (failuresLeft > 0) {
        failuresLeft--;
        throw new Error('handler failed');
      }
    },
  };
}

// Timers (the consumer's retry backoff, and the waits below) run on the test's clock, not the wall's.
beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] }));
afterEach(() => vi.useRealTimers());

/** Let time pass on the test's clock, `ms` at a time, until `cond` holds (at most 5 s of it). */
async function until(cond: () => boolean, what: string, ms = 2) {
  for (let waited = 0; !cond(); waited += ms) {
    if (waited > 5_000) throw new Error(`timed out waiting for ${what}`);
    await vi.advanceTimersByTimeAsync(ms);
  }
}

function consumer(handler: (b: ConsumedMessage[]) => Promise<void>, maxBatchBytes = 1_000, maxInFlight = 1) {
  const commits: PartitionOffset[][] = [];
  const c = new GroupCommitConsumer({
    handler,
    commit: async (o) => void commits.push(o),
    maxBatchBytes,
    maxInFlight,
    retry: { initialMs: 1, maxMs: 2 },
    log,
  });
  return { c, commits };
}

describe('group-commit consumer', () => {
  it('hands what arrived while the handler was busy to it as one batch, across partitions, in order', async () => {
    const h = gatedHandler();
    const { c } = consumer(h.handler);
    await c.add(msgs(0, 0, 2), noHeartbeat);
    await until(() => h.waiting() === 1, 'first call');
    await c.add(msgs(1, 0, 3), noHeartbeat);
    await c.add(msgs(0, 2, 2), noHeartbeat);
    await c.add(msgs(2, 7, 1), noHeartbeat);
    h.release();
    await until(() => h.waiting() === 1 && h.calls.length === 2, 'second call');
    h.release();
    await c.drain();
    expect(h.calls.map((b) => b.map((m) => `${m.partition}:${m.offset}`))).toEqual([
      ['0:0', '0:1'],
      ['1:0', '1:1', '1:2', '0:2', '0:3', '2:7'],
    ]);
  });

  it('commits the next offset of every partition only after the handler resolved', async () => {
    const h = gatedHandler();
    const { c, commits } = consumer(h.handler);
    await c.add([...msgs(0, 10, 3), ...msgs(3, 4, 2)], noHeartbeat);
    await until(() => h.waiting() === 1, 'call');
    await vi.advanceTimersByTimeAsync(20);
    expect(commits).toEqual([]);
    h.release();
    await c.drain();
    expect(commits).toEqual([
      [
        { topic: 't', partition: 0, offset: '13' },
        { topic: 't', partition: 3, offset: '6' },
      ],
    ]);
  });

  it('retries a failing batch in place and commits nothing past it until it succeeds', async () => {
    const h = gatedHandler();
    const { c, commits } = consumer(h.handler);
    h.failNext(2);
    await c.add(msgs(0, 0, 2), noHeartbeat);
    await until(() => h.waiting() === 1, 'attempt 1');
    await c.add(msgs(0, 2, 1), noHeartbeat);
    h.release();
    await until(() => h.calls.length === 2 && h.waiting() === 1, 'attempt 2');
    h.release();
    await until(() => h.calls.length === 3 && h.waiting() === 1, 'attempt 3');
    expect(commits).toEqual([]);
    h.release();
    await until(() => h.calls.length === 4 && h.waiting() === 1, 'the message queued meanwhile');
    expect(h.calls.slice(0, 3).map((b) => b.map((m) => m.offset))).toEqual([
      ['0', '1'],
      ['0', '1'],
      ['0', '1'],
    ]);
    expect(h.calls[3]!.map((m) => m.offset)).toEqual(['2']);
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '2' }]]);
    h.release();
    await c.drain();
    expect(commits.at(-1)).toEqual([{ topic: 't', partition: 0, offset: '3' }]);
  });

  it('never hands the handler more than maxBatchBytes, but always at least one message', async () => {
    const h = gatedHandler();
    const { c } = consumer(h.handler, 100);
    await c.add(msgs(0, 0, 1, 10), noHeartbeat);
    await until(() => h.waiting() === 1, 'first');
    const added = c.add([...msgs(0, 1, 7, 40), ...msgs(0, 8, 1, 500)], noHeartbeat);
    h.open();
    await added;
    await c.drain();
    expect(h.calls.map((b) => b.map((m) => m.value.length))).toEqual([[10], [40, 40], [40, 40], [40, 40], [40], [500]]);
  });

  it('makes add wait while more than twice maxBatchBytes is pending, heartbeating', async () => {
    const h = gatedHandler();
    const { c } = consumer(h.handler, 100);
    await c.add(msgs(0, 0, 1), noHeartbeat);
    await until(() => h.waiting() === 1, 'first');
    let heartbeats = 0;
    let added = false;
    void c.add(msgs(0, 1, 25, 10), async () => void heartbeats++).then(() => (added = true));
    await vi.advanceTimersByTimeAsync(30);
    expect(added).toBe(false);
    h.release();
    // The handler took 100 of the 250 pending bytes: 150 left, under the bound.
    await until(() => added, 'room');
    expect(heartbeats).toBe(1);
    h.open();
    await c.drain();
    expect(h.calls.map((b) => b.length)).toEqual([1, 10, 10, 5]);
  });

  it('drain handles what is pending, then takes nothing more; a batch failing at drain is left uncommitted', async () => {
    const h = gatedHandler();
    const { c, commits } = consumer(h.handler);
    await c.add(msgs(0, 0, 1), noHeartbeat);
    await until(() => h.waiting() === 1, 'first');
    await c.add(msgs(0, 1, 1), noHeartbeat);
    const drained = c.drain();
    h.release();
    await until(() => h.calls.length === 2 && h.waiting() === 1, 'pending handled');
    h.failNext(1);
    h.release();
    await drained;
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '1' }]]);
    await c.add(msgs(0, 2, 1), noHeartbeat);
    await vi.advanceTimersByTimeAsync(20);
    expect(h.calls).toHaveLength(2);
  });

  it('commits nothing for a partition this member no longer owns', async () => {
    const owned = new Set([0, 1]);
    const commits: PartitionOffset[][] = [];
    const c = new GroupCommitConsumer({
      handler: async () => undefined,
      commit: async (o) => void commits.push(o),
      owns: (_t, p) => owned.has(p),
      maxBatchBytes: 1_000,
      retry: { initialMs: 1, maxMs: 2 },
      log,
    });
    owned.delete(1); // a rebalance moved partition 1 away while its messages were queued
    await c.add([...msgs(0, 3, 1), ...msgs(1, 9, 1)], noHeartbeat);
    await c.drain();
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '4' }]]);
  });

  it('never moves a committed offset back when older messages come again', async () => {
    const h = gatedHandler();
    const { c, commits } = consumer(h.handler);
    await c.add(msgs(0, 5, 2), noHeartbeat);
    await until(() => h.waiting() === 1, 'first');
    h.release();
    await until(() => commits.length === 1, 'commit');
    await c.add(msgs(0, 5, 1), noHeartbeat);
    await until(() => h.waiting() === 1, 'again');
    h.release();
    await c.drain();
    expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '7' }]]);
  });

  describe('with two batches in flight', () => {
    /** A handler whose calls each wait for their own release, in any order. */
    function keyedHandler() {
      const calls: ConsumedMessage[][] = [];
      const gates = new Map<string, () => void>();
      return {
        calls,
        release(firstOffset: string) {
          gates.get(firstOffset)!();
        },
        running: () => [...gates.keys()],
        handler: async (batch: ConsumedMessage[]) => {
          calls.push(batch);
          await new Promise<void>((r) => gates.set(batch[0]!.offset, r));
          gates.delete(batch[0]!.offset);
        },
      };
    }

    it('hands a second batch over while the first is still being handled', async () => {
      const h = keyedHandler();
      const { c } = consumer(h.handler, 1_000, 2);
      await c.add(msgs(0, 0, 2), noHeartbeat);
      await c.add(msgs(0, 2, 2), noHeartbeat);
      await c.add(msgs(0, 4, 1), noHeartbeat);
      await until(() => h.running().length === 2, 'two at once');
      expect(h.running()).toEqual(['0', '2']);
      h.release('2');
      await until(() => h.running().includes('4'), 'third takes the free place');
      h.release('0');
      h.release('4');
      await c.drain();
      expect(h.calls.map((b) => b.map((m) => m.offset))).toEqual([['0', '1'], ['2', '3'], ['4']]);
    });

    it('commits in order: a later batch that finished first waits for the earlier one', async () => {
      const h = keyedHandler();
      const { c, commits } = consumer(h.handler, 1_000, 2);
      await c.add(msgs(0, 0, 2), noHeartbeat);
      await c.add(msgs(0, 2, 2), noHeartbeat);
      await until(() => h.running().length === 2, 'two at once');
      h.release('2');
      await vi.advanceTimersByTimeAsync(20);
      expect(commits).toEqual([]);
      h.release('0');
      await until(() => commits.length === 1, 'commit');
      expect(commits).toEqual([[{ topic: 't', partition: 0, offset: '4' }]]);
      await c.drain();
    });

    it('a batch that fails at drain keeps itself and every later batch uncommitted, earlier ones committed', async () => {
      const calls: string[] = [];
      const gates = new Map<string, (fail: boolean) => void>();
      const c2 = consumer(
        async (batch) => {
          calls.push(batch[0]!.offset);
          const fail = await new Promise<boolean>((r) => gates.set(batch[0]!.offset, r));
          if (fail) throw new Error('handler failed');
        },
        1_000,
        2,
      );
      await c2.c.add(msgs(0, 0, 1), noHeartbeat);
      await c2.c.add(msgs(0, 1, 1), noHeartbeat);
      await until(() => gates.size === 2, 'two at once');
      const drained = c2.c.drain();
      gates.get('1')!(true);
      await vi.advanceTimersByTimeAsync(20);
      gates.get('0')!(false);
      await drained;
      expect(c2.commits).toEqual([[{ topic: 't', partition: 0, offset: '1' }]]);
    });

    it('while one batch keeps failing, at most two finished batches wait behind it uncommitted', async () => {
      const handled: string[] = [];
      const { c, commits } = consumer(
        async (batch) => {
          if (batch[0]!.offset === '0') throw new Error('keeps failing');
          handled.push(batch[0]!.offset);
        },
        10,
        2,
      );
      let added = false;
      void (async () => {
        for (let i = 0; i < 6; i++) await c.add(msgs(0, i, 1, 10), noHeartbeat);
        added = true;
      })();
      await until(() => added, 'the adds');
      await vi.advanceTimersByTimeAsync(50);
      expect(handled).toEqual(['1', '2', '3']);
      expect(commits).toEqual([]);
      let drained = false;
      void c.drain().then(() => (drained = true));
      await until(() => drained, 'drain');
      expect(commits).toEqual([]);
    });
  });
});

describe('group-commit consumer: linger', () => {
  // The linger reads performance.now(): faked too, so the test's clock decides what is old enough.
  beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'] }));
  const lingering = (lingerMs: number, maxBatchBytes = 1_000) => {
    const calls: ConsumedMessage[][] = [];
    const commits: PartitionOffset[][] = [];
    const c = new GroupCommitConsumer({
      handler: async (b) => void calls.push(b),
      commit: async (o) => void commits.push(o),
      maxBatchBytes,
      lingerMs,
      retry: { initialMs: 1, maxMs: 2 },
      log,
    });
    return { c, calls, commits };
  };

  it('a trickle of fetches waits lingerMs from its first message, then goes to the handler as one batch, committed after it', async () => {
    const { c, calls, commits } = lingering(100);
    await c.add(msgs(0, 0, 1), noHeartbeat);
    await vi.advanceTimersByTimeAsync(40);
    await c.add(msgs(0, 1, 1), noHeartbeat);
    await vi.advanceTimersByTimeAsync(40);
    await c.add(msgs(1, 0, 1), noHeartbeat);
    expect(calls).toHaveLength(0);
    expect(commits).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(25);
    expect(calls.map((b) => b.length)).toEqual([3]);
    await until(() => commits.length === 1, 'the commit');
    expect(commits[0]).toEqual(
      expect.arrayContaining([
        { topic: 't', partition: 0, offset: '2' },
        { topic: 't', partition: 1, offset: '1' },
      ]),
    );
  });

  it('without a linger every fetch goes at once', async () => {
    const { c, calls } = lingering(0);
    await c.add(msgs(0, 0, 1), noHeartbeat);
    await vi.advanceTimersByTimeAsync(0);
    await c.add(msgs(0, 1, 1), noHeartbeat);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((b) => b.length)).toEqual([1, 1]);
  });

  it('a full batch does not wait, and drain() hands a lingering one over at once', async () => {
    const { c, calls } = lingering(60_000, 100);
    await c.add(msgs(0, 0, 10, 10), noHeartbeat);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls.map((b) => b.length)).toEqual([10]);
    await c.add(msgs(0, 10, 2, 10), noHeartbeat);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toHaveLength(1);
    await c.drain();
    expect(calls.map((b) => b.length)).toEqual([10, 2]);
  });
});
