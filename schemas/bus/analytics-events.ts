import type { StampedAnalyticsBatch } from '../analytics-event.ts';
import { TOPICS } from '../topics.ts';

/**
 * Analytics batches on the bus (key projectId): the edge's stamped events of one request, with a batch id the
 * processor claims so a re-delivered batch is stored and counted once. JSON, `{ "v": 1, ... }`.
 */
export const TOPIC = TOPICS.analyticsEvents;

export type AnalyticsBatchMessage = StampedAnalyticsBatch & { batchId: string };

export function encode(m: AnalyticsBatchMessage): Buffer {
  return Buffer.from(JSON.stringify(m));
}

/**
 * The message, or undefined for bytes that are none. A written-out check rather than a schema: the edge built every
 * event with the rules of schemas/analytics-event.ts, and this runs for every event at the pipeline's full rate.
 */
export function decode(value: Buffer): AnalyticsBatchMessage | undefined {
  try {
    const m = JSON.parse(value.toString('utf8')) as Partial<AnalyticsBatchMessage>;
    if (m?.v !== 1 || typeof m.batchId !== 'string' || typeof m.projectId !== 'string' || typeof m.receivedAt !== 'number' || !Array.isArray(m.events))
      return undefined;
    if (
      !m.events.every(
        (e) => e && typeof e.uuid === 'string' && typeof e.event === 'string' && typeof e.distinctId === 'string' && typeof e.timestamp === 'number',
      )
    )
      return undefined;
    return { ...m, originHost: m.originHost ?? null } as AnalyticsBatchMessage;
  } catch {
    return undefined;
  }
}
