import type { Bus, BusMessage } from '../platform/ports/bus.ts';

/**
 * Group commit for the edge's bus hand-off. A Kafka producer with idempotence keeps one request in
 * flight per broker, so one send per HTTP request caps the edge at 1/RTT. Instead, messages of
 * requests that arrive while a send is in flight (or in the same turn of the event loop) go out
 * together in the next send; each request's promise settles with the send that carried its message.
 *
 * Each request is still exactly one message, so a request is either wholly on the bus or not at all.
 * A failed send fails every request it carried (each answers 503); where a multi-partition send
 * partly succeeded, a client retry may store that batch twice (at least once, never lost).
 */
export interface Publisher {
  publish(message: BusMessage): Promise<void>;
}

interface Pending {
  message: BusMessage;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export function createCoalescingPublisher(bus: Bus, topic: string, opts: { maxMessages?: number; maxInFlight?: number } = {}): Publisher {
  const maxMessages = opts.maxMessages ?? 500;
  const maxInFlight = opts.maxInFlight ?? 1;
  let queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;

  const flush = () => {
    scheduled = false;
    while (queue.length && inFlight < maxInFlight) {
      const batch = queue.length <= maxMessages ? queue : queue.slice(0, maxMessages);
      queue = queue.length <= maxMessages ? [] : queue.slice(maxMessages);
      inFlight++;
      bus.publish(topic, batch.map((p) => p.message)).then(
        () => {
          for (const p of batch) p.resolve();
        },
        (err) => {
          for (const p of batch) p.reject(err);
        },
      ).finally(() => {
        inFlight--;
        if (queue.length) schedule();
      });
    }
  };
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  return {
    publish(message) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ message, resolve, reject });
        if (inFlight < maxInFlight) schedule();
      });
    },
  };
}
