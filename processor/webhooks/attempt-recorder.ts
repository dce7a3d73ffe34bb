import type { Queryable } from '../../platform/ports/relational-store.ts';
import { deliveriesRepository, type AttemptOutcome, type ClaimedDelivery, type Finished } from './deliveries-repository.ts';

/**
 * Attempts recorded in groups (group commit): an attempt that finishes while a group is being written joins the next
 * one, which is written as soon as the one before is done; nothing waits on a timer. `record` resolves with the
 * delivery's new status once its group is committed (null: the lease was lost).
 */
export function createAttemptRecorder(db: Queryable, maxGroup = 500) {
  let queue: Array<{ d: ClaimedDelivery; o: AttemptOutcome; resolve(s: Finished): void; reject(e: unknown): void }> = [];
  let writing = false;
  const write = async () => {
    writing = true;
    while (queue.length) {
      const group = queue.slice(0, maxGroup);
      queue = queue.slice(group.length);
      try {
        const statuses = await deliveriesRepository.finishAttempts(db, group);
        group.forEach((g, i) => g.resolve(statuses[i]!));
      } catch (err) {
        for (const g of group) g.reject(err);
      }
    }
    writing = false;
  };
  return {
    record(d: ClaimedDelivery, o: AttemptOutcome): Promise<Finished> {
      return new Promise<Finished>((resolve, reject) => {
        queue.push({ d, o, resolve, reject });
        // Attempts finishing in the same turn of the event loop go together.
        if (!writing) {
          writing = true;
          setImmediate(() => void write());
        }
      });
    },
  };
}
