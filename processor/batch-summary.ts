/**
 * What a pipeline did with one delivery, and the shapes its steps speak in: the same for every pipeline of the
 * processor (errors, analytics), so the consumer scaffold (pipeline-consumer.ts) counts and logs them alike.
 */

/** What a step says about one item: carry on with a (possibly changed) value, or drop it for a reason. */
export type StepOutcome<T, Reason extends string = string> = { kind: 'ok'; value: T } | { kind: 'drop'; reason: Reason };

export const ok = <T>(value: T): StepOutcome<T, never> => ({ kind: 'ok', value });
export const drop = <R extends string>(reason: R): StepOutcome<never, R> => ({ kind: 'drop', reason });

export interface BatchSummary<Reason extends string = string> {
  /** Events stored by this delivery. */
  accepted: number;
  /** Events an earlier delivery already stored (a re-delivery): not stored or counted again. */
  duplicates: number;
  /** Events not stored, by snake_case reason. */
  dropped: Partial<Record<Reason, number>>;
  /** What a pipeline's steps did besides keeping or dropping, by snake_case name (the error pipeline's symbolication: frames resolved, unresolved by reason, maps refused by reason). */
  counted?: Record<string, number>;
}

export const emptySummary = <R extends string = string>(): BatchSummary<R> => ({ accepted: 0, duplicates: 0, dropped: {} });

export function addSummaries<R extends string>(a: BatchSummary<R>, b: BatchSummary<R>): BatchSummary<R> {
  const dropped: Partial<Record<R, number>> = { ...a.dropped };
  for (const [k, v] of Object.entries(b.dropped) as Array<[R, number]>) dropped[k] = (dropped[k] ?? 0) + v;
  const out: BatchSummary<R> = { accepted: a.accepted + b.accepted, duplicates: a.duplicates + b.duplicates, dropped };
  if (a.counted || b.counted) {
    const counted: Record<string, number> = { ...a.counted };
    for (const [k, v] of Object.entries(b.counted ?? {})) counted[k] = (counted[k] ?? 0) + v;
    out.counted = counted;
  }
  return out;
}
