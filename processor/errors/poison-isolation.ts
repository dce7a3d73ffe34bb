import type { Logger } from '../../platform/logger.ts';
import { AnalyticalQueryError } from '../../platform/ports/analytical-store.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import type { BatchSummary, ErrorPipeline } from './error-pipeline.ts';
import { addSummaries } from '../batch-summary.ts';

/**
 * A batch that fails because of what it holds fails on every delivery, and the consumer retries it in
 * place: one such event would stall its whole partition. So a failure of that kind (a data error from a
 * store, or an error thrown by our own code) is narrowed down by halves to the events that cause it; those
 * are set aside (`setAside`: kept, scrubbed, for an operator to replay) and counted as `unprocessable`, and
 * every other event of the batch is handled. Re-running parts of a batch is safe: each attempt is one
 * Postgres transaction, and the ledger turns events an earlier attempt committed into duplicates (whose
 * ClickHouse rows are rewritten).
 *
 * A transient failure (a connection, a timeout, a lock or serialization conflict, an overloaded store) is
 * thrown as it is, so the bus delivers the batch again and nothing is set aside.
 */
export interface PoisonIsolationDeps {
  pipeline: Pick<ErrorPipeline, 'handleBatch'>;
  /** Keep a one-event batch that no store takes. A failure to keep it throws, and the batch is retried. */
  setAside(batch: StampedErrorBatch, err: unknown): Promise<void>;
  logger: Logger;
}

export async function handleIsolatingPoison(deps: PoisonIsolationDeps, batches: StampedErrorBatch[]): Promise<BatchSummary> {
  try {
    return await deps.pipeline.handleBatch(batches);
  } catch (err) {
    if (!failsForItsContent(err)) throw err;
    const events = batches.flatMap((b) => b.events.map((e) => ({ ...b, events: [e] })));
    if (events.length <= 1) {
      const e = events[0];
      if (e) {
        await deps.setAside(e, err);
        deps.logger.error({ err, eventId: e.events[0]!.eventId, projectId: e.projectId }, 'error event cannot be stored; set aside as unprocessable');
      }
      return { accepted: 0, duplicates: 0, dropped: { unprocessable: events.length } };
    }
    deps.logger.warn({ err: (err as Error).message, events: events.length }, 'error batch failed for its content; narrowing it down');
    const half = Math.ceil(events.length / 2);
    const a = await handleIsolatingPoison(deps, events.slice(0, half));
    const b = await handleIsolatingPoison(deps, events.slice(half));
    return addSummaries(a, b);
  }
}

/**
 * SQLSTATE classes of Postgres errors that the same input raises again: cardinality (21), data exception
 * (22, e.g. a character Postgres cannot store), integrity constraint (23), syntax or undefined object (42),
 * program limit (54, e.g. an index row too large). Everything else (connection 08, conflicts 40, resources
 * 53, operator intervention 57, system 58, ...) may pass on a later try.
 */
const DETERMINISTIC_SQLSTATE_CLASSES = new Set(['21', '22', '23', '42', '54']);

/** True when retrying the same batch would fail the same way. */
export function failsForItsContent(err: unknown): boolean {
  if (err instanceof AnalyticalQueryError) return !err.retryable;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && DETERMINISTIC_SQLSTATE_CLASSES.has(code.slice(0, 2));
}
