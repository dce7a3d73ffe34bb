import type { Identity } from './identity.ts';
import { createQueue, cut, noteDropped, onLeave, safe, type Transport } from './transport.ts';
import { WIRE_LIMITS } from './wire.ts';

/**
 * Analytics: `capture(event, properties)` queues an event for the visitor (identity.ts) with a uuid, the time and the
 * page's path, sent as transport.ts says (100 a request); the next event sent after drops says how many
 * (`properties.$dropped`).
 */
export interface AnalyticsClient {
  capture(event: unknown, properties?: Record<string, unknown>): void;
  flush(): Promise<void>;
  readonly dropped: number;
}

const uuid = () => safe(() => crypto.randomUUID())() || undefined;

export function createAnalytics(t: Transport, identity: Identity): AnalyticsClient {
  const queue = createQueue(t, 'analytics/i', WIRE_LIMITS.analyticsBatch.maxEvents, (e, n) => noteDropped(e, 'properties', '$dropped', n));
  onLeave(() => void queue.flush());
  return {
    capture: (event, properties) =>
      void safe(() =>
        queue.add({
          event: cut(event, 200),
          distinctId: identity.id,
          properties: properties || {},
          timestamp: Date.now(),
          uuid: uuid(),
          path: typeof location === 'undefined' ? undefined : cut(location.pathname, 2048),
        }),
      )(),
    flush: () => safe(queue.flush)() ?? Promise.resolve(),
    get dropped() {
      return queue.dropped;
    },
  };
}
