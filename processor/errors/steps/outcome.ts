import { drop as sharedDrop, ok as sharedOk, type StepOutcome as SharedStepOutcome } from '../../batch-summary.ts';
import type { StampedErrorEvent, Environment } from '../../../schemas/error-event.ts';
import type { StackFrame } from '../stack-parser.ts';

/** What a step says about one event (the processor's shared outcome type, ../../batch-summary.ts), with the error reasons. */
export type StepOutcome<T> = SharedStepOutcome<T, DropReason>;

/**
 * Every reason an event is not stored, snake_case. Each is counted (the pipeline's drop counters); the
 * ones decided in the batch transaction are also recorded in the ledger, and caps in error_monthly_usage.
 * - unknown_project, monthly_cap, open_groups_cap: the spec's rules (§7.4, §7.5);
 * - invalid_message: a bus message that does not decode (counted per event it held, or 1 when unreadable);
 * - invalid_event: an event of a v1 message that fails the event checks;
 * - unprocessable: an event no store would take, set aside for replay (poison-isolation.ts).
 */
export const DROP_REASONS = ['unknown_project', 'monthly_cap', 'open_groups_cap', 'invalid_message', 'invalid_event', 'unprocessable'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export const ok = <T>(value: T): StepOutcome<T> => sharedOk(value);
export const drop = <T>(reason: DropReason): StepOutcome<T> => sharedDrop(reason);

/** One event as it enters the pipeline: the edge's stamp plus the event. */
export interface IncomingEvent {
  projectId: string;
  originHost: string | null;
  /** Epoch ms at the edge: the occurrence time everywhere (deterministic on re-delivery). */
  receivedAt: number;
  event: StampedErrorEvent;
  /** The batch's User-Agent (StampedErrorBatch.userAgent): a browser event's contexts come from it (context-step.ts). */
  userAgent?: string;
}

export interface FingerprintedEvent extends IncomingEvent {
  fingerprint: string;
  groupId: string;
  inAppFrame?: StackFrame;
}

/** A fingerprinted event with the environment the processor stamped on it (§7.4). */
export interface EnvironmentStampedEvent extends FingerprintedEvent {
  environment: Environment;
  /** The deploy that served it (issue 41, steps/environment-step.ts), when one can be named. */
  deployId?: string;
}
