import type { Queryable } from '../../platform/ports/relational-store.ts';
import { ledgerRepository } from './repositories/ledger-repository.ts';

/**
 * Retention of the consumed-events ledger (error_events_consumed). The ledger makes re-delivery
 * harmless: an event id already there changes nothing. A message is delivered again only while its
 * offset is uncommitted (after a crash, a failed batch, a rebalance), and never later than the topic
 * keeps it, so ids need to be remembered for that long and no longer. Without pruning the table would
 * grow by one row per event forever.
 *
 * Kafka's default retention is 7 days (docker-compose keeps the default), hence the default here.
 */
export const LEDGER_RETENTION = {
  keepMs: 7 * 24 * 60 * 60 * 1000,
  /** How often a processor prunes; several processors pruning at once only wait on each other's rows. */
  intervalMs: 10 * 60 * 1000,
  /** Rows deleted per statement, so one prune never holds many locks or one long transaction. */
  batchSize: 10_000,
};

/** Delete ledger rows consumed longer than `keepMs` ago (database time), in batches; returns how many. */
export async function pruneConsumedLedger(db: Queryable, opts: { keepMs?: number; batchSize?: number } = {}): Promise<number> {
  const keepSec = (opts.keepMs ?? LEDGER_RETENTION.keepMs) / 1000;
  const batchSize = opts.batchSize ?? LEDGER_RETENTION.batchSize;
  let total = 0;
  for (;;) {
    const n = await ledgerRepository.pruneOlderThan(db, keepSec, batchSize);
    total += n;
    if (n < batchSize) return total;
  }
}
