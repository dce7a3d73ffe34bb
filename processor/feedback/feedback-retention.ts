import type { Queryable } from '../../platform/ports/relational-store.ts';
import { LEDGER_RETENTION } from '../errors/ledger-retention.ts';
import { feedbackStoreRepository } from './repositories/feedback-store-repository.ts';

/**
 * The feedback family's pass in the background (the client-items consumer's prune, every 10 minutes like the error
 * ledger's):
 *   1. link    feedback that arrived before its error event gets the event's issue once the error ledger holds it.
 *              The ledger keeps event ids LEDGER_RETENTION (7 days) and this pass runs every 10 minutes, so a link is
 *              copied long before the ledger forgets it; until then the read path resolves it (api/feedback/).
 *   2. prune   feedback received longer than FEEDBACK_RETENTION.keepMs ago, in batches.
 */
export const FEEDBACK_RETENTION = {
  /** 90 days: Sentry's feedback retention on its default plans. */
  keepMs: 90 * 24 * 60 * 60 * 1000,
  intervalMs: LEDGER_RETENTION.intervalMs,
  batchSize: LEDGER_RETENTION.batchSize,
  /** Feedback younger than this may still find its event: the ledger's window, and a day's margin. */
  linkWindowMs: LEDGER_RETENTION.keepMs + 24 * 60 * 60 * 1000,
};

/** Link pending feedback, then delete what is past retention; returns the rows linked plus deleted. */
export async function feedbackMaintenance(db: Queryable, opts: { keepMs?: number; batchSize?: number } = {}): Promise<number> {
  const batchSize = opts.batchSize ?? FEEDBACK_RETENTION.batchSize;
  // 1. link
  let total = await feedbackStoreRepository.linkPending(db, FEEDBACK_RETENTION.linkWindowMs / 1000, batchSize);
  // 2. prune
  const keepSec = (opts.keepMs ?? FEEDBACK_RETENTION.keepMs) / 1000;
  for (;;) {
    const n = await feedbackStoreRepository.pruneOlderThan(db, keepSec, batchSize);
    total += n;
    if (n < batchSize) return total;
  }
}
