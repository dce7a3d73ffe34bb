import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { BatchHandler, Bus } from '../platform/ports/bus.ts';
import { startPipelineConsumer } from './pipeline-consumer.ts';

/** A bus that hands each publish straight to the one subscribed handler: the scaffold, without a log on disk. */
function directBus(): Bus {
  let handler: BatchHandler | undefined;
  let offset = 0;
  return {
    adapter: 'in-process',
    async publish(topic, messages) {
      await handler?.(messages.map((m) => ({ ...m, topic, partition: 0, offset: String(offset++) })));
    },
    async subscribe(_topic, _group, h) {
      handler = h;
      return { stop: async () => void (handler = undefined) };
    },
    async close() {},
  };
}

/** The scaffold every processor pipeline runs in: decode, handle, count, prune (processor/README.md). */
describe('the pipeline consumer scaffold', () => {
  const logger = pino({ level: 'silent' });

  it('counts what does not decode, hands the rest to the pipeline, and adds up the summaries', async () => {
    const bus = directBus();
    const handled: number[][] = [];
    const consumer = await startPipelineConsumer<number[], 'odd' | 'invalid_event'>(
      { bus, logger },
      {
        name: 'test pipeline',
        topic: 't',
        group: 'g',
        maxInFlight: 1,
        decode: (value, countDrop) => {
          const n = JSON.parse(value.toString()) as unknown;
          if (!Array.isArray(n)) return undefined;
          if (n.includes(-1)) countDrop('invalid_event');
          return n.filter((x) => x >= 0);
        },
        handle: async (batches) => {
          handled.push(...batches);
          const all = batches.flat();
          return { accepted: all.filter((x) => x % 2 === 0).length, duplicates: 0, dropped: { odd: all.filter((x) => x % 2 === 1).length } };
        },
      },
    );
    await bus.publish('t', [
      { key: 'k', value: Buffer.from('[2,3,-1]') },
      { key: 'k', value: Buffer.from('"no"') },
    ]);
    await bus.publish('t', [{ key: 'k', value: Buffer.from('[4]') }]);
    await vi.waitFor(() => expect(consumer.stats()).toEqual({ accepted: 2, duplicates: 0, dropped: { odd: 1, invalid_event: 1, invalid_message: 1 } }));
    expect(handled).toEqual([[2, 3], [4]]);
    await consumer.stop();
    await bus.close();
  });

  it('prunes the ledger on a schedule, starting within the first interval, until stopped', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const bus = directBus();
    let runs = 0;
    let idled = false;
    try {
      const consumer = await startPipelineConsumer(
        { bus, logger },
        {
          name: 'p',
          topic: 't',
          group: 'g',
          maxInFlight: 1,
          decode: () => undefined,
          handle: async () => ({ accepted: 0, duplicates: 0, dropped: {} }),
          prune: { intervalMs: 60_000, run: async () => ++runs },
          idle: async () => void (idled = true),
        },
      );
      await vi.advanceTimersByTimeAsync(60_000);
      expect(runs).toBe(1);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(runs).toBe(2);
      await consumer.stop();
      expect(idled).toBe(true);
      await vi.advanceTimersByTimeAsync(5 * 60_000);
      expect(runs).toBe(2);
    } finally {
      vi.useRealTimers();
      await bus.close();
    }
  });
});
