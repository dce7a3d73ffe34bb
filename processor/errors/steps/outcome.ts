import type { StampedErrorEvent, Environment } from '../../../schemas/error-event.ts';
import type { StackFrame } from '../stack-parser.ts';

/** What a step says about one event: carry on with a (possibly changed) value, or drop it for a reason. */
export type StepOutcome<T> = { kind: 'ok'; value: T } | { kind: 'drop'; reason: DropReason };

/** Every reason an event can be dropped, snake_case, counted in error_monthly_usage.dropped. */
export type DropReason = 'unknown_project' | 'monthly_cap' | 'open_groups_cap';

export const ok = <T>(value: T): StepOutcome<T> => ({ kind: 'ok', value });
export const drop = <T>(reason: DropReason): StepOutcome<T> => ({ kind: 'drop', reason });

/** One event as it enters the pipeline: the edge's stamp plus the event. */
export interface IncomingEvent {
  projectId: string;
  originHost: string | null;
  /** Epoch ms at the edge: the occurrence time everywhere (deterministic on re-delivery). */
  receivedAt: number;
  event: StampedErrorEvent;
}

export interface FingerprintedEvent extends IncomingEvent {
  fingerprint: string;
  groupId: string;
  inAppFrame?: StackFrame;
}

export interface StampedEvent extends FingerprintedEvent {
  environment: Environment;
}
