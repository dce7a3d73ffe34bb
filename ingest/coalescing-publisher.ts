import type { Bus, BusMessage } from '../platform/ports/bus.ts';

/**
 * Group commit for the edge's bus hand-off. A Kafka producer with idempotence keeps one request in
 * flight per broker, so one send per HTTP request caps the edge at 1/RTT. Instead, messages of
 * requests that arrive while a send is in flight (or in the same turn of the event loop) go out
 * together in the next send; each request's promise settles with the send that carried its message.
 *
 * A send carries at most `maxMessages` messages and the bus's `maxPublishBytes` bytes of values (the first
 * message always goes, whatever its size). Kafka refuses a record batch larger than the broker's
 * `message.max.bytes` (1 MiB by default) whole, and every message of a send may land in one partition's
 * batch: without the byte cap, a burst of 64 KB bodies queued behind a slow send became one send of many
 * megabytes, which a real broker would refuse (every request in it answered 503).
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

export interface CoalescingOptions {
  /** Most messages per send (500). */
  maxMessages?: number;
  /** Most bytes of message values per send; defaults to the bus's `maxPublishBytes` (none when it has none). */
  maxBytes?: number;
  /** Sends in flight at once (1). */
  maxInFlight?: number;
}

export function createCoalescingPublisher(bus: Bus, topic: string, opts: CoalescingOptions = {}): Publisher {
  const maxMessages = opts.maxMessages ?? 500;
  const maxBytes = opts.maxBytes ?? bus.maxPublishBytes ?? Infinity;
  const maxInFlight = opts.maxInFlight ?? 1;
  const queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;

  /** The next send's share of the queue: up to maxMessages and maxBytes, at least one message. */
  const take = (): Pending[] => {
    let n = 0;
    let bytes = 0;
    while (n < queue.length && n < maxMessages) {
      const size = queue[n]!.message.value.length;
      if (n > 0 && bytes + size > maxBytes) break;
      bytes += size;
      n++;
    }
    return queue.splice(0, n);
  };

  const flush = () => {
    scheduled = false;
    while (queue.length && inFlight < maxInFlight) {
      const batch = take();
      inFlight++;
      bus
        .publish(
          topic,
          batch.map((p) => p.message),
        )
        .then(
          () => {
            for (const p of batch) p.resolve();
          },
          (err) => {
            for (const p of batch) p.reject(err);
          },
        )
        .finally(() => {
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
