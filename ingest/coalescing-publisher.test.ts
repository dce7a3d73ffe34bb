import { describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../platform/ports/bus.ts';
import { createCoalescingPublisher } from './coalescing-publisher.ts';

function controlledBus() {
  const sends: Array<{ messages: BusMessage[]; resolve: () => void; reject: (e: Error) => void }> = [];
  const bus: Bus = {
    adapter: 'kafka',
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
