import type { Identity } from './identity.ts';
import { createQueue, cut, here, noteDropped, onLeave, safe, type Transport } from './transport.ts';
import { ANALYTICS_BATCH_EVENTS } from './wire.ts';

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

const uuid = safe(() => crypto.randomUUID());

export function createAnalytics(t: Transport, identity: Identity): AnalyticsClient {
  const queue = createQueue(t, 'analytics/i', ANALYTICS_BATCH_EVENTS, (e, n) => noteDropped(e, 'properties', '$dropped', n));
  onLeave(queue.flush);
  return {
    capture: safe((event: unknown, properties?: Record<string, unknown>) =>
      queue.add({
        event: cut(event, 200),
        distinctId: identity.id,
        properties: properties || {},
        timestamp: Date.now(),
        uuid: uuid(),
        path: here() || undefined,
      }),
    ),
    flush: queue.flush,
    get dropped() {
      return queue.dropped;
    },
  };
}
