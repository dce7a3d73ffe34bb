import { describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../platform/ports/bus.ts';
import { createCoalescingPublisher } from './coalescing-publisher.ts';
import { MAX_PUBLISH_BYTES } from '../platform/adapters/bus/kafka-bus.ts';

function controlledBus(maxPublishBytes?: number) {
  const sends: Array<{ messages: BusMessage[]; resolve: () => void; reject: (e: Error) => void }> = [];
  const bus: Bus = {
    adapter: 'kafka',
    maxPublishBytes,
    publish: (_topic, messages) => new Promise<void>((resolve, reject) => sends.push({ messages, resolve, reject })),
    subscribe: async () => ({ stop: async () => undefined }),
    close: async () => undefined,
  };
  return { bus, sends };
}

const msg = (k: string): BusMessage => ({ key: k, value: Buffer.from(k) });
const tick = () => new Promise((r) => setImmediate(r));

describe('coalescing publisher', () => {
  it('sends what arrived while a send was in flight as one send, settling each request with its send', async () => {
    const { bus, sends } = controlledBus();
    const pub = createCoalescingPublisher(bus, 't');
    const first = pub.publish(msg('a'));
    await tick();
    expect(sends).toHaveLength(1);
    const later = [pub.publish(msg('b')), pub.publish(msg('c'))];
    await tick();
    expect(sends).toHaveLength(1); // nothing new goes out while one send is in flight
    let laterDone = false;
    void Promise.all(later).then(() => (laterDone = true));
    sends[0].resolve();
    await first;
    await tick();
    await tick();
    expect(laterDone).toBe(false);
    expect(sends).toHaveLength(2);
    expect(sends[1].messages.map((m) => m.key)).toEqual(['b', 'c']);
    sends[1].resolve();
    await Promise.all(later);
  });

  it('a failed send rejects every request it carried, and only those', async () => {
    const { bus, sends } = controlledBus();
    const pub = createCoalescingPublisher(bus, 't');
    const a = pub.publish(msg('a'));
    const b = pub.publish(msg('b'));
    await tick();
    expect(sends[0].messages).toHaveLength(2);
    const c = pub.publish(msg('c'));
    sends[0].reject(new Error('down'));
    await expect(a).rejects.toThrow('down');
    await expect(b).rejects.toThrow('down');
    await tick();
    sends[1].resolve();
    await expect(c).resolves.toBeUndefined();
  });
});

describe('coalescing publisher: size of a send', () => {
  const sized = (k: string, bytes: number): BusMessage => ({ key: k, value: Buffer.alloc(bytes, 1) });

  it('splits what queued behind a send into sends of at most maxBytes, in order, the first message always going', async () => {
    const { bus, sends } = controlledBus();
    const pub = createCoalescingPublisher(bus, 't', { maxBytes: 10_000 });
    const first = pub.publish(sized('0', 100));
    await tick();
    // Queued behind the first send: 4 KB each, then one larger than the cap on its own.
    const queued = ['a', 'b', 'c', 'd', 'e'].map((k) => pub.publish(sized(k, 4_000)));
    const big = pub.publish(sized('big', 25_000));
    const last = pub.publish(sized('z', 10));
    const sizes = () => sends.map((s) => s.messages.map((m) => m.key));
    for (let i = 0; i < 5; i++) {
      sends[i]!.resolve();
      await tick();
      await tick();
    }
    expect(sizes()).toEqual([['0'], ['a', 'b'], ['c', 'd'], ['e'], ['big'], ['z']]);
    for (const s of sends.slice(1)) {
      const bytes = s.messages.reduce((n, m) => n + m.value.length, 0);
      if (s.messages.length > 1) expect(bytes).toBeLessThanOrEqual(10_000);
    }
    sends[5]!.resolve();
    await Promise.all([first, ...queued, big, last]);
  });

  it("keeps to the bus's limit, which for Kafka is under the broker's default 1 MiB message.max.bytes", async () => {
    expect(MAX_PUBLISH_BYTES).toBeLessThan(1024 * 1024);
    const { bus, sends } = controlledBus(MAX_PUBLISH_BYTES);
    const pub = createCoalescingPublisher(bus, 't');
    const first = pub.publish(sized('0', 10));
    await tick();
    const rest = Array.from({ length: 60 }, (_, i) => pub.publish(sized(String(i), 64 * 1024)));
    sends[0]!.resolve();
    // Bounded: 60 messages of 64 KB need 5 sends of at most 14; each is checked, then acknowledged.
    for (let i = 1; i < 20 && sends.slice(1).reduce((n, s) => n + s.messages.length, 0) < 60; i++) {
      await tick();
      await tick();
      expect(sends[i]).toBeDefined();
      expect(sends[i]!.messages.reduce((n, m) => n + m.value.length, 0)).toBeLessThan(1024 * 1024);
      sends[i]!.resolve();
    }
    await Promise.all([first, ...rest]);
    expect(sends.slice(1).reduce((n, s) => n + s.messages.length, 0)).toBe(60);
  });
});
