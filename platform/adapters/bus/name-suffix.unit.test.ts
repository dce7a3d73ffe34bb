import { describe, expect, it } from 'vitest';
import type { BatchHandler, Bus, BusMessage } from '../../ports/bus.ts';
import { withNameSuffix } from './name-suffix.ts';

/** A bus that records the names it is given and delivers what is published to the handlers of that topic. */
function recordingBus() {
  const published: Array<{ topic: string; messages: BusMessage[] }> = [];
  const subscribed: Array<{ topic: string; groupId: string; handler: BatchHandler }> = [];
  const bus: Bus = {
    adapter: 'in-process',
    maxPublishBytes: 1000,
    async publish(topic, messages) {
      published.push({ topic, messages });
      for (const s of subscribed.filter((x) => x.topic === topic)) await s.handler(messages.map((m, i) => ({ ...m, topic, partition: 0, offset: String(i) })));
    },
    async subscribe(topic, groupId, handler) {
      subscribed.push({ topic, groupId, handler });
      return { stop: async () => undefined };
    },
    async lag() {
      return subscribed.map((s) => ({ topic: s.topic, group: s.groupId, messages: 2 }));
    },
    async close() {},
  };
  return { bus, published, subscribed };
}

describe('BUS_NAME_SUFFIX on the bus', () => {
  it('appends the suffix to every topic and group the bus is given, and hands back the plain names', async () => {
    const raw = recordingBus();
    const bus = withNameSuffix(raw.bus, '.staging');
    const seen: string[] = [];
    await bus.subscribe('errors.events.v1', 'processor-errors', async (ms) => {
      seen.push(...ms.map((m) => m.topic));
    });
    await bus.publish('errors.events.v1', [{ key: 'k', value: Buffer.from('x') }]);

    expect(raw.subscribed.map(({ topic, groupId }) => ({ topic, groupId }))).toEqual([
      { topic: 'errors.events.v1.staging', groupId: 'processor-errors.staging' },
    ]);
    expect(raw.published.map((p) => p.topic)).toEqual(['errors.events.v1.staging']);
    expect(seen).toEqual(['errors.events.v1']);
    expect(await bus.lag?.()).toEqual([{ topic: 'errors.events.v1', group: 'processor-errors', messages: 2 }]);
    expect(bus.adapter).toBe('in-process');
    expect(bus.maxPublishBytes).toBe(1000);
  });

  it('is the bus itself without a suffix', () => {
    const raw = recordingBus();
    expect(withNameSuffix(raw.bus, '')).toBe(raw.bus);
  });
});
