import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { BusUnavailableError, type Bus, type ConsumedMessage, type Subscription } from '../../ports/bus.ts';
import { createInProcessBus } from './in-process-bus.ts';
import { openTopicLog, type LogRecord } from './local-log.ts';
import { createKafkaBus } from './kafka-bus.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';
import { startKafkaMock } from '../../../test/support/kafka-mock.ts';

const logger = pino({ level: 'silent' });
const text = (m: ConsumedMessage) => m.value.toString();
const msg = (key: string, value: string) => ({ key, value: Buffer.from(value) });

/** Polls until `cond` holds; a generous deadline only guards against a hang. */
async function until(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The contract every bus adapter keeps. */
function busContract(makeBus: () => Promise<Bus>) {
  let bus: Bus;
  const subs: Subscription[] = [];
  beforeAll(async () => {
    bus = await makeBus();
  });
  afterAll(async () => {
    for (const s of subs) await s.stop();
    await bus.close();
  });
  // Kafka group ids are cluster-wide: one group per test, or members of other tests' topics rebalance with it.
  const sub = async (topic: string, group: string, handler: (m: ConsumedMessage[]) => Promise<void>) => {
    const s = await bus.subscribe(topic, group, handler);
    subs.push(s);
    return s;
  };

  it('delivers published messages in order per key, with topic, partition and offset', async () => {
    const topic = `t-${randomUUID()}`;
    const seen: ConsumedMessage[] = [];
    await sub(topic, `g-${randomUUID()}`, async (ms) => {
      seen.push(...ms);
    });
    await bus.publish(topic, [msg('a', 'a1'), msg('b', 'b1'), msg('a', 'a2')]);
    await bus.publish(topic, [msg('b', 'b2'), msg('a', 'a3')]);
    await bus.publish(topic, [msg('b', 'b3')]);
    await until(() => seen.length >= 6, 'six messages');
    expect(seen).toHaveLength(6);
    expect(seen.filter((m) => m.key === 'a').map(text)).toEqual(['a1', 'a2', 'a3']);
    expect(seen.filter((m) => m.key === 'b').map(text)).toEqual(['b1', 'b2', 'b3']);
    for (const m of seen) {
      expect(m.topic).toBe(topic);
      expect(Number.isInteger(m.partition)).toBe(true);
      expect(BigInt(m.offset) >= 0n).toBe(true);
    }
  });

  it('delivers every message to each consumer group once', async () => {
    const topic = `t-${randomUUID()}`;
    const one: string[] = [];
    const two: string[] = [];
    await sub(topic, `g1-${randomUUID()}`, async (ms) => void one.push(...ms.map(text)));
    await sub(topic, `g2-${randomUUID()}`, async (ms) => void two.push(...ms.map(text)));
    await bus.publish(topic, [msg('k', 'x'), msg('k', 'y')]);
    await until(() => one.length >= 2 && two.length >= 2, 'both groups');
    expect(one).toEqual(['x', 'y']);
    expect(two).toEqual(['x', 'y']);
  });

  it('commits only after the handler resolved: a handler that throws gets the message again', async () => {
    const topic = `t-${randomUUID()}`;
    const attempts: string[] = [];
    const processed: string[] = [];
    let failNext = true;
    await sub(topic, `g-${randomUUID()}`, async (ms) => {
      attempts.push(...ms.map(text));
      if (failNext) {
        failNext = false;
        throw new Error('store down for a moment');
      }
      processed.push(...ms.map(text));
    });
    await bus.publish(topic, [msg('k', 'once')]);
    await until(() => processed.length >= 1, 'the retried message');
    expect(attempts).toEqual(['once', 'once']);
    expect(processed).toEqual(['once']);
  });

  it('a restarted subscriber in the same group continues after the committed offset', async () => {
    const topic = `t-${randomUUID()}`;
    const group = `g-${randomUUID()}`;
    const first: string[] = [];
    const s1 = await bus.subscribe(topic, group, async (ms) => void first.push(...ms.map(text)));
    await bus.publish(topic, [msg('k', 'm1'), msg('k', 'm2')]);
    await until(() => first.length >= 2, 'm1 and m2');
    await s1.stop();

    await bus.publish(topic, [msg('k', 'm3'), msg('k', 'm4')]);
    const second: string[] = [];
    await sub(topic, group, async (ms) => void second.push(...ms.map(text)));
    await until(() => second.length >= 2, 'm3 and m4');
    // One more message through the group proves nothing committed comes back late.
    await bus.publish(topic, [msg('k', 'm5')]);
    await until(() => second.length >= 3, 'm5');
    expect(first).toEqual(['m1', 'm2']);
    expect(second).toEqual(['m3', 'm4', 'm5']);
  });

  it('a group that subscribes after messages were published still receives them', async () => {
    const topic = `t-${randomUUID()}`;
    await bus.publish(topic, [msg('k', 'early')]);
    const seen: string[] = [];
    await sub(topic, `late-${randomUUID()}`, async (ms) => void seen.push(...ms.map(text)));
    await until(() => seen.length >= 1, 'the early message');
    expect(seen).toEqual(['early']);
  });

  it("tells a group's lag (what it has not processed) and answers a ping", async () => {
    await bus.ping?.();
    const topic = `t-${randomUUID()}`;
    const group = `g-${randomUUID()}`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let got = 0;
    await sub(topic, group, async (ms) => {
      got += ms.length;
      await gate;
    });
    await bus.publish(topic, [msg('k', '1'), msg('k', '2'), msg('k', '3')]);
    const lagOf = async () => (await bus.lag!()).find((l) => l.topic === topic && l.group === group)?.messages;
    await until(() => got >= 1, 'the handler holding a batch');
    await untilAsync(async () => (await lagOf()) === 3, 'a lag of three');
    release();
    await untilAsync(async () => (await lagOf()) === 0, 'no lag once processed');
  });
}

async function untilAsync(cond: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('bus contract: in-process with its log on disk', () => {
  const dirs: string[] = [];
  const logDir = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'bus-log-'));
    dirs.push(d);
    return d;
  };
  busContract(async () => createInProcessBus({ logDir: logDir() }));

  it('drained() resolves once every group committed what was published before the call, and says whether it waited', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: string[] = [];
    const fast: string[] = [];
    await bus.subscribe('t', 'slow', async (ms) => {
      await gate;
      slow.push(...ms.map(text));
    });
    await bus.subscribe('t', 'fast', async (ms) => void fast.push(...ms.map(text)));
    await bus.publish('t', [msg('k', 'a')]);
    await bus.publish('t', [msg('k', 'b')]);
    const waiting = bus.drained!();
    release();
    expect(await waiting).toBe(true);
    expect(slow).toEqual(['a', 'b']);
    expect(fast).toEqual(['a', 'b']);
    expect(await bus.drained!()).toBe(false);
    await bus.close();
  });

  it('a subscription with lingerMs gets a trickle of publishes as one batch: after lingerMs, or at once for drained() or a full batch', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    const calls: string[][] = [];
    await bus.subscribe('t', 'lingering', async (ms) => void calls.push(ms.map(text)), { lingerMs: 60_000 });
    for (const v of ['a', 'b', 'c']) await bus.publish('t', [msg('k', v)]);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toEqual([]);
    // Someone waits for the group: what lingers goes now, in one call.
    expect(await bus.drained!()).toBe(true);
    expect(calls).toEqual([['a', 'b', 'c']]);
    // A full batch (MAX_BATCH messages) does not wait.
    await bus.publish(
      't',
      Array.from({ length: 1_000 }, (_, i) => msg('k', `m${i}`)),
    );
    await until(() => calls.length === 2, 'the full batch without drained()');
    expect(calls[1]).toHaveLength(1_000);
    await bus.close();
  });

  it('a lingering batch goes by itself once its oldest message is lingerMs old', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    const calls: string[][] = [];
    await bus.subscribe('t', 'short', async (ms) => void calls.push(ms.map(text)), { lingerMs: 200 });
    await Promise.all(['a', 'b'].map((v) => bus.publish('t', [msg('k', v)])));
    await until(() => calls.flat().length === 2, 'both messages without drained()');
    await bus.close();
  });

  it('drained() rejects when the group stops before it caught up, and when the bus closes', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started = 0;
    const s = await bus.subscribe('t', 'g', async (ms) => {
      if (started++ === 0) await held;
    });
    await bus.publish('t', [msg('k', 'held')]);
    await until(() => started === 1, 'the held batch');
    await bus.publish('t', [msg('k', 'queued')]);
    // the expectation is attached before the stop, so the rejection is never unhandled while it is awaited
    const waiting = expect(bus.drained!()).rejects.toThrow(/stopped before it caught up/);
    const stopping = s.stop();
    release();
    await stopping;
    await waiting;

    let releaseAgain!: () => void;
    const heldAgain = new Promise<void>((r) => (releaseAgain = r));
    await bus.subscribe('t', 'g', async () => heldAgain);
    await bus.publish('t', [msg('k', 'then-closed')]);
    const unfinished = expect(bus.drained!()).rejects.toBeInstanceOf(BusUnavailableError);
    const closing = bus.close();
    releaseAgain();
    await closing;
    await unfinished;
  });

  it('a group subscribing while messages are published gets each one once, in order (read back, then live)', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    for (let i = 0; i < 500; i++) await bus.publish('t', [msg('k', `m${i}`)]);
    const seen: ConsumedMessage[] = [];
    const publishing = Array.from({ length: 500 }, (_, i) => bus.publish('t', [msg('k', `m${500 + i}`)]));
    await bus.subscribe('t', 'late', async (ms) => void seen.push(...ms));
    await Promise.all(publishing);
    await bus.drained!();
    expect(seen.map((m) => m.offset)).toEqual(Array.from({ length: 1000 }, (_, i) => String(i)));
    expect(seen.map(text)).toEqual(Array.from({ length: 1000 }, (_, i) => `m${i}`));
    await bus.close();
  });

  it('never runs one group’s handler concurrently', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    let active = 0;
    let maxActive = 0;
    let total = 0;
    await bus.subscribe('t', 'g', async (ms) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 5));
      total += ms.length;
      active--;
    });
    await Promise.all(Array.from({ length: 20 }, (_, i) => bus.publish('t', [msg('k', String(i))])));
    await bus.drained!();
    expect(total).toBe(20);
    expect(maxActive).toBe(1);
    await bus.close();
  });

  it('bounds what waits for a consumer: past the bound, publish is refused at once', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    const huge = Array.from({ length: 100_001 }, () => msg('k', 'v'));
    await expect(bus.publish('t', huge)).rejects.toBeInstanceOf(BusUnavailableError);
    await bus.close();
  });

  it('refuses every publish and subscription once closed', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    await bus.publish('t', [msg('k', 'v')]);
    await bus.close();
    await expect(bus.publish('t', [msg('k', 'v')])).rejects.toBeInstanceOf(BusUnavailableError);
    await expect(bus.subscribe('t', 'g', async () => undefined)).rejects.toBeInstanceOf(BusUnavailableError);
  });

  it('publish resolves once the log holds the messages, before any consumer ran; a restart delivers them', async () => {
    const dir = logDir();
    const topic = 'errors.v1';
    const first = createInProcessBus({ logDir: dir });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    await first.subscribe(topic, 'g', async (ms) => {
      started.push(...ms.map(text));
      await held;
    });
    await first.publish(topic, [msg('k', 'accepted-1'), msg('k', 'accepted-2')]);
    // Resolved while the handler still holds its batch: nothing is committed yet.
    await until(() => started.length >= 2, 'the handler started');
    const closing = first.close();
    release();
    await closing;

    // The batch finished before close, so it is committed; a new one published after a restart, with the group away,
    // and then a process that "crashed" (never closed) before its consumer ran.
    const second = createInProcessBus({ logDir: dir });
    await second.publish(topic, [msg('k', 'after-restart')]);
    const third = createInProcessBus({ logDir: dir });
    const seen: ConsumedMessage[] = [];
    await third.subscribe(topic, 'g', async (ms) => void seen.push(...ms));
    await until(() => seen.length >= 1, 'the message published before the restart');
    expect(seen.map(text)).toEqual(['after-restart']);
    expect(seen[0]!.offset).toBe('2');
    await third.close();
    await second.close();
  });

  it('a batch whose handler never finished comes back after a restart; committed ones do not', async () => {
    const dir = logDir();
    const crashed = createInProcessBus({ logDir: dir });
    const firstRun: string[] = [];
    await crashed.subscribe('t', 'g', async (ms) => {
      firstRun.push(...ms.map(text));
      if (ms.some((m) => text(m) === 'poison-for-now')) await new Promise(() => undefined); // the process dies here
    });
    await crashed.publish('t', [msg('k', 'done-1')]);
    await until(() => firstRun.length >= 1, 'done-1');
    await new Promise((r) => setTimeout(r, 50)); // its commit is written
    await crashed.publish('t', [msg('k', 'poison-for-now'), msg('k', 'after-it')]);
    await until(() => firstRun.includes('poison-for-now'), 'the stuck batch');

    const restarted = createInProcessBus({ logDir: dir });
    const seen: string[] = [];
    await restarted.subscribe('t', 'g', async (ms) => void seen.push(...ms.map(text)));
    await until(() => seen.length >= 2, 'the uncommitted batch');
    expect(seen).toEqual(['poison-for-now', 'after-it']);
    await restarted.close();
  });

  it('a handler that fails is retried until it succeeds; the publish was not refused', async () => {
    const bus = createInProcessBus({ logDir: logDir() });
    let attempts = 0;
    const processed: string[] = [];
    await bus.subscribe('t', 'g', async (ms) => {
      if (++attempts <= 4) throw new Error('database unreachable');
      processed.push(...ms.map(text));
    });
    await bus.publish('t', [msg('k', 'kept')]);
    await until(() => processed.length >= 1, 'the retried message');
    expect(attempts).toBe(5);
    expect(processed).toEqual(['kept']);
    await bus.close();
  });

  it('a torn record at the end of the log (a crash mid-write) is cut off; everything before it and after it is read', async () => {
    const dir = logDir();
    const bus = createInProcessBus({ logDir: dir });
    await bus.publish('t', [msg('k', 'whole-1'), msg('k', 'whole-2')]);
    await bus.close();
    const topicDir = path.join(dir, 't');
    const segment = path.join(topicDir, readdirSync(topicDir).find((f) => f.endsWith('.log'))!);
    const whole = statSync(segment).size;
    // Half a frame: a length that promises more bytes than follow.
    appendFileSync(segment, Buffer.from([0, 0, 0, 40, 1, 2, 3, 4, 0, 1]));

    const reopened = createInProcessBus({ logDir: dir });
    await reopened.publish('t', [msg('k', 'after-the-tear')]);
    expect(statSync(segment).size).toBeGreaterThan(whole);
    const seen: ConsumedMessage[] = [];
    await reopened.subscribe('t', 'g', async (ms) => void seen.push(...ms));
    await until(() => seen.length >= 3, 'three records');
    expect(seen.map(text)).toEqual(['whole-1', 'whole-2', 'after-the-tear']);
    expect(seen.map((m) => m.offset)).toEqual(['0', '1', '2']);
    await reopened.close();
  });

  it('deletes a segment once every group is past it, and keeps what the slowest group still has to read', async () => {
    const dir = logDir();
    const bus = createInProcessBus({ logDir: dir, segmentBytes: 256 });
    const fast: string[] = [];
    const slow: string[] = [];
    let slowOpen = false;
    await bus.subscribe('t', 'fast', async (ms) => void fast.push(...ms.map(text)));
    await bus.subscribe('t', 'slow', async (ms) => {
      if (!slowOpen) throw new Error('not yet');
      slow.push(...ms.map(text));
    });
    for (let i = 0; i < 20; i++) await bus.publish('t', [msg('k', `m${i}-${'x'.repeat(60)}`)]);
    await until(() => fast.length >= 20, 'the fast group');
    const segments = () => readdirSync(path.join(dir, 't')).filter((f) => f.endsWith('.log'));
    expect(segments().length).toBeGreaterThan(3);
    slowOpen = true;
    await until(() => slow.length >= 20, 'the slow group', 60_000);
    await until(() => segments().length === 1, 'old segments deleted');
    await bus.close();
  }, 90_000);

  it('runs up to maxInFlight batches at once, and never commits past one still running', async () => {
    const dir = logDir();
    const bus = createInProcessBus({ logDir: dir });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let active = 0;
    let maxActive = 0;
    const finished: string[] = [];
    await bus.subscribe(
      't',
      'g',
      async (ms) => {
        active++;
        maxActive = Math.max(maxActive, active);
        if (ms.some((m) => text(m) === 'slow')) await held;
        finished.push(...ms.map(text));
        active--;
      },
      { maxInFlight: 2 },
    );
    await bus.publish('t', [msg('k', 'slow')]);
    await until(() => active === 1, 'the slow batch running');
    await bus.publish('t', [msg('k', 'quick')]);
    await until(() => finished.includes('quick'), 'the quick batch, beside the slow one');
    expect(maxActive).toBe(2);
    await new Promise((r) => setTimeout(r, 50));

    // The slow batch never finishes in this process: a restart must deliver it again, though a later one finished.
    const restarted = createInProcessBus({ logDir: dir });
    const seen: string[] = [];
    await restarted.subscribe('t', 'g', async (ms) => void seen.push(...ms.map(text)));
    await until(() => seen.length >= 1, 'the uncommitted batch');
    expect(seen[0]).toBe('slow');
    await restarted.close();
    release();
    await bus.close();
  });

  it('bounds the bytes waiting for a group: past the bound, publish is refused at once and nothing is written', async () => {
    const dir = logDir();
    const bus = createInProcessBus({ logDir: dir, maxWaitingBytes: 1_000 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let started = 0;
    await bus.subscribe('t', 'g', async () => {
      started++;
      await held;
    });
    await bus.publish('t', [msg('k', 'first')]);
    await until(() => started === 1, 'the first batch in the handler');
    await bus.publish('t', [msg('k', 'a'.repeat(600))]);
    await expect(bus.publish('t', [msg('k', 'b'.repeat(600))])).rejects.toBeInstanceOf(BusUnavailableError);
    release();
    await bus.close();
    const log = await openTopicLog(path.join(dir, 't'), () => undefined);
    const records: LogRecord[] = [];
    await log.readFrom(0n, (rs) => void records.push(...rs));
    expect(records.map((r) => r.value.length)).toEqual([5, 600]);
    await log.close();
  });

  it('keeps topic and group names inside the bus directory', async () => {
    const dir = logDir();
    const bus = createInProcessBus({ logDir: path.join(dir, 'bus') });
    const seen: string[] = [];
    await bus.subscribe('../../escape', '../group', async (ms) => void seen.push(...ms.map(text)));
    await bus.publish('../../escape', [msg('k', 'v')]);
    await until(() => seen.length >= 1, 'the message');
    await bus.close();
    expect(readdirSync(dir)).toEqual(['bus']);
    expect(existsSync(path.join(dir, 'escape'))).toBe(false);
  });
});

describeWith(['kafka'], 'bus contract: kafka', () => {
  busContract(() => createKafkaBus({ brokers: backendUrl('kafka')!.split(','), clientId: `test-${randomUUID()}`, logger }));

  it('a batch whose handler failed is not committed: the next member of the group gets it', async () => {
    const bus = await createKafkaBus({ brokers: backendUrl('kafka')!.split(','), clientId: `test-${randomUUID()}`, logger });
    const topic = `t-${randomUUID()}`;
    const group = `g-${randomUUID()}`;
    try {
      let attempts = 0;
      const failing = await bus.subscribe(topic, group, async () => {
        attempts++;
        throw new Error('effects could not be stored');
      });
      await bus.publish(topic, [msg('k', 'precious')]);
      await until(() => attempts >= 1, 'a first attempt');
      await failing.stop();
      const seen: string[] = [];
      const healthy = await bus.subscribe(topic, group, async (ms) => void seen.push(...ms.map(text)));
      await until(() => seen.length >= 1, 'the uncommitted message', 90_000);
      expect(seen).toEqual(['precious']);
      await healthy.stop();
    } finally {
      await bus.close();
    }
  }, 120_000);

  it('refuses to start against an unreachable broker with BusUnavailableError', async () => {
    await expect(createKafkaBus({ brokers: ['127.0.0.1:1'], clientId: 'dead', logger })).rejects.toBeInstanceOf(BusUnavailableError);
  });

  it('publish rejects with BusUnavailableError, rather than hanging, once the cluster is gone', async () => {
    const mock = await startKafkaMock({ brokers: 1 });
    let bus: Bus | undefined;
    try {
      bus = await createKafkaBus({ brokers: mock.brokers.split(','), clientId: 'doomed', logger });
      const topic = `t-${randomUUID()}`;
      await bus.publish(topic, [msg('k', 'before')]);
      await bus.ping!();
      await mock.stop();
      await expect(bus.publish(topic, [msg('k', 'after')])).rejects.toBeInstanceOf(BusUnavailableError);
      await expect(bus.ping!()).rejects.toThrow();
    } finally {
      await bus?.close();
      await mock.stop();
    }
  });
});
