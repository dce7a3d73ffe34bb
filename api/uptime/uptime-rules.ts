import type { z } from 'zod';
import { nextScheduled, scheduleProblem } from '../../domain/uptime/heartbeat-schedule.ts';
import type { CreateHeartbeatBody, CreateMonitorBody, UpdateMonitorBody } from '../../schemas/api/uptime.ts';
import type { HeartbeatValues, MonitorRow, MonitorValues } from './uptime-repository.ts';

/** What a monitor is saved with: a check's timeout never outlasts its interval. */
const capped = (v: MonitorValues): MonitorValues => ({ ...v, timeoutMs: Math.min(v.timeoutMs, v.intervalSec * 1000) });

/** A new monitor's values: the body (its defaults filled in by the schema) with the URL the outbound guard passed. */
export function newMonitorValues(b: z.output<typeof CreateMonitorBody>, url: string): MonitorValues {
  const { expectedStatus, kind: _kind, ...rest } = b;
  return capped({ ...rest, url, expectedMin: expectedStatus.min, expectedMax: expectedStatus.max });
}

/**
 * A change merged into the monitor it changes: what the change names, the rest as it was. `checkNow`: the change
 * resumes a paused monitor, which is then checked at once with its failure count cleared.
 */
export function changedMonitorValues(was: MonitorRow, b: z.output<typeof UpdateMonitorBody>, url: string): { values: MonitorValues; checkNow: boolean } {
  const values = capped({
    name: b.name ?? was.name,
    url,
    method: b.method ?? was.method,
    intervalSec: b.intervalSec ?? was.interval_sec,
    timeoutMs: b.timeoutMs ?? was.timeout_ms,
    expectedMin: b.expectedStatus?.min ?? was.expected_min,
    expectedMax: b.expectedStatus?.max ?? was.expected_max,
    bodyContains: b.bodyContains === undefined ? was.body_contains : b.bodyContains,
    failuresToDown: b.failuresToDown ?? was.failures_to_down,
    public: b.public ?? was.public,
    showUrl: b.showUrl ?? was.show_url,
    paused: b.paused ?? was.paused,
  });
  return { values, checkNow: b.paused === false && was.paused };
}

/** What a change may name for each kind of monitor: the rest apply to the other kind only. */
const URL_ONLY = ['url', 'method', 'intervalSec', 'timeoutMs', 'expectedStatus', 'bodyContains', 'showUrl'] as const;
const HEARTBEAT_ONLY = ['schedule', 'timezone', 'checkinMarginMin', 'maxRuntimeMin', 'recoveriesToUp'] as const;

/** The fields of a change that do not apply to a monitor of this kind (the route answers 400 naming them). */
export function misplacedFields(kind: 'url' | 'heartbeat', b: z.output<typeof UpdateMonitorBody>): string[] {
  return (kind === 'url' ? HEARTBEAT_ONLY : URL_ONLY).filter((k) => b[k] !== undefined);
}

/** A hand-made heartbeat's values: its first check-in expected at the schedule's next time. `problem`: why not. */
export function newHeartbeatValues(b: z.output<typeof CreateHeartbeatBody>, now: number): HeartbeatValues | { problem: string } {
  const problem = scheduleProblem(b.schedule, b.timezone);
  if (problem) return { problem };
  const { kind: _kind, name, ...rest } = b;
  return { ...rest, name: name ?? b.slug, expectedAt: nextScheduled(b.schedule, b.timezone, now) };
}

/**
 * A change merged into the heartbeat it changes. A new schedule or time zone, or a resume, expects the next check-in at
 * the schedule's next time from now; otherwise it stays expected when it was.
 */
export function changedHeartbeatValues(was: MonitorRow, b: z.output<typeof UpdateMonitorBody>, now: number): HeartbeatValues | { problem: string } {
  const schedule = b.schedule ?? was.schedule!;
  const timezone = b.timezone ?? was.timezone ?? 'UTC';
  const problem = scheduleProblem(schedule, timezone);
  if (problem) return { problem };
  const paused = b.paused ?? was.paused;
  const rescheduled = b.schedule !== undefined || b.timezone !== undefined || (was.paused && !paused) || was.expected_at === null;
  return {
    name: b.name ?? was.name,
    slug: was.slug!,
    schedule,
    timezone,
    checkinMarginMin: b.checkinMarginMin ?? was.checkin_margin_min ?? 0,
    maxRuntimeMin: b.maxRuntimeMin ?? was.max_runtime_min ?? 1,
    failuresToDown: b.failuresToDown ?? was.failures_to_down,
    recoveriesToUp: b.recoveriesToUp ?? was.recoveries_to_up,
    public: b.public ?? was.public,
    paused,
    expectedAt: rescheduled ? nextScheduled(schedule, timezone, now) : new Date(was.expected_at!).getTime(),
  };
}
