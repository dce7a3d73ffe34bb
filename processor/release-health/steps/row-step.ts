import type { SessionAggregate, SessionUpdate } from '../../../schemas/bus/client-items.ts';
import type { StepOutcome } from '../../batch-summary.ts';
import { chTime } from '../../time-text.ts';

/**
 * A session update or aggregate as its `release_sessions` row (platform/migrations/analytical/0007_release_sessions.sql).
 *
 * How updates and aggregates combine into Sentry's numbers (api/release-health/ reads them):
 *   update     one row per update, with 0/1 flags: `started` on the init update, `crashed` / `unhandled` / `abnormal` / `exited`
 *              by its status, `errored` when it saw an error (errors > 0 or status errored). Read back counted once
 *              per session id, so a session that sends init, ok, ok, crashed counts one started and one crashed.
 *   aggregate  one row per Sentry `sessions` bucket with its counts; each session is in exactly one of exited,
 *              errored, abnormal, crashed, unhandled, so started = their sum.
 * The row's `bucket` is the minute the session started (Sentry buckets by start too): every update of a session
 * lands in the same bucket. A start more than MAX_AGE_MS before the edge received it is dropped (`session_too_old`,
 * as Relay drops them); one after it (a client clock ahead) is taken as received then.
 */
export const MAX_AGE_MS = 5 * 24 * 3_600_000;

export type RowDropReason = 'session_too_old';

export interface RowStamp {
  projectId: string;
  batchId: string;
  receivedAt: number;
  environment: string;
  deployId: string;
  release: string;
}

function bucketOf(started: number, receivedAt: number): StepOutcome<string, RowDropReason> {
  if (started < receivedAt - MAX_AGE_MS) return { kind: 'drop', reason: 'session_too_old' };
  const at = Math.min(started, receivedAt);
  return { kind: 'ok', value: chTime(Math.floor(at / 60_000) * 60_000).slice(0, 19) };
}

const base = (s: RowStamp, item: number, kind: 'update' | 'aggregate', bucket: string) => ({
  project_id: s.projectId,
  environment: s.environment,
  deploy_id: s.deployId,
  release: s.release,
  batch_id: s.batchId,
  item,
  kind,
  bucket,
  received_at: chTime(s.receivedAt),
});

/** Items of one message are numbered updates first (0..), then aggregates (from AGGREGATE_ITEM_BASE). */
export const AGGREGATE_ITEM_BASE = 1_000_000;

export function updateRow(u: SessionUpdate, item: number, s: RowStamp): StepOutcome<Record<string, unknown>, RowDropReason> {
  const bucket = bucketOf(u.started, s.receivedAt);
  if (bucket.kind === 'drop') return bucket;
  return {
    kind: 'ok',
    value: {
      ...base(s, item, 'update', bucket.value),
      session_id: u.sid,
      distinct_id: u.did ?? '',
      started: u.init ? 1 : 0,
      crashed: u.status === 'crashed' ? 1 : 0,
      unhandled: u.status === 'unhandled' ? 1 : 0,
      errored: u.errors > 0 || u.status === 'errored' ? 1 : 0,
      abnormal: u.status === 'abnormal' ? 1 : 0,
      exited: u.status === 'exited' ? 1 : 0,
    },
  };
}

export function aggregateRow(a: SessionAggregate, item: number, s: RowStamp): StepOutcome<Record<string, unknown>, RowDropReason> {
  const bucket = bucketOf(a.started, s.receivedAt);
  if (bucket.kind === 'drop') return bucket;
  return {
    kind: 'ok',
    value: {
      ...base(s, AGGREGATE_ITEM_BASE + item, 'aggregate', bucket.value),
      session_id: '',
      distinct_id: a.did ?? '',
      started: a.exited + a.errored + a.abnormal + a.crashed + (a.unhandled ?? 0),
      crashed: a.crashed,
      unhandled: a.unhandled ?? 0,
      errored: a.errored,
      abnormal: a.abnormal,
      exited: a.exited,
    },
  };
}
