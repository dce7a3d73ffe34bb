import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { feedbackStoreRepository } from '../repositories/feedback-store-repository.ts';

/**
 * The issue of the error event each feedback names, when this project stored it: one ledger read for the batch (by the
 * edge's event id or the SDK's own, processor/errors/client-event-id.ts). Feedback whose event is not stored yet keeps
 * no issue here; the read path and the later pass (feedback-retention.ts) link it once the event is.
 */
export async function linkStep(db: Queryable, items: Array<{ projectId: string; eventId?: string }>): Promise<Array<string | null>> {
  const refs = items.flatMap((i) => (i.eventId ? [{ projectId: i.projectId, eventId: i.eventId }] : []));
  const issues = await feedbackStoreRepository.issuesOfEvents(db, refs);
  return items.map((i) => (i.eventId ? (issues.get(`${i.projectId}\n${i.eventId}`) ?? null) : null));
}
