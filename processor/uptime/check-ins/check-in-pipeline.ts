/**
 * The check-in pipeline (issue 40): Sentry's cron check-ins (`check_in` items of withMonitor / captureCheckIn, and the
 * HTTP cron form) as the client-items consumer hands them over (schemas/bus/client-items.ts), driving heartbeat
 * monitors in the uptime family. Each check-in, in the order sent, in one transaction with its monitor's row locked:
 *
 *  1. slug       the monitor's slug as Sentry makes it (lower case, `-` for the rest); empty: check_in_invalid_slug
 *  2. config     a monitor_config with its defaults (LIMITS.uptime.heartbeat); a schedule or time zone that cannot be
 *                used drops the check-in (check_in_invalid_monitor_config), as Sentry does
 *  3. monitor    the project's heartbeat of that slug: created (upsert) or reconfigured from the config; without one
 *                and without a config the check-in is dropped (check_in_unknown_monitor, as Sentry does); a paused
 *                monitor takes none (check_in_monitor_paused); at most LIMITS.uptime.maxMonitorsPerProject monitors
 *                (check_in_monitor_limit)
 *  4. record     one row per check-in id: `in_progress` opens it (timing out after the maximum runtime), `ok`/`error`
 *                closes it or stands alone; an id without a row's (the nil UUID, or none: the HTTP form) closes the
 *                newest running one. The same id and status again is a duplicate; closing what is closed already (or
 *                timed out) is dropped (check_in_already_closed)
 *  5. schedule   a new run (an `in_progress`, or a closing check-in without one) is the expected check-in: the next
 *                one is expected at the schedule's next time (domain/uptime/heartbeat-schedule.ts)
 *  6. state      `ok` is a success, `error` a failure (`failed`): incidents open and end by the monitor's thresholds;
 *                the uptime monitor (../uptime-monitor.ts) sends their `uptime.*` events and mail, and finds missed and
 *                timed-out check-ins
 *  7. keep       the newest LIMITS.uptime.heartbeat.checkInsKept check-ins of the monitor
 *
 * A re-delivered message changes nothing (each step is keyed by check-in id and status). Drops are counted by reason
 * under the family's prefix (`check_in_...`).
 */
import { monitorSlug, nextExpectedAfterCheckIn, nextScheduled, scheduleProblem } from '../../../domain/uptime/heartbeat-schedule.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { CheckInItem, ClientItemsMessage, MonitorConfig } from '../../../schemas/bus/client-items.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import type { BatchSummary } from '../../batch-summary.ts';
import type { ClientItemsHandler, ClientItemsPlatform } from '../../client-items/client-items-consumer.ts';
import { heartbeatsRepository, type HeartbeatConfig, type HeartbeatRow } from '../repositories/heartbeats-repository.ts';

export type CheckInDropReason =
  | 'check_in_invalid_slug'
  | 'check_in_invalid_monitor_config'
  | 'check_in_unknown_project'
  | 'check_in_unknown_monitor'
  | 'check_in_monitor_paused'
  | 'check_in_monitor_limit'
  | 'check_in_already_closed';

type Outcome = { kind: 'accepted'; opened: boolean; ended: boolean } | { kind: 'duplicate' } | { kind: 'drop'; reason: CheckInDropReason };

const H = LIMITS.uptime.heartbeat;
const MAX_MS = 2_147_483_647;
const NIL_IDS = new Set(['', '00000000-0000-0000-0000-000000000000', '00000000000000000000000000000000']);

/** A monitor_config with Sentry's defaults for what it leaves out (a threshold past ours is cut to ours). */
export function heartbeatConfigOf(c: MonitorConfig): HeartbeatConfig | { problem: string } {
  const timezone = c.timezone || 'UTC';
  const problem = scheduleProblem(c.schedule, timezone);
  if (problem) return { problem };
  return {
    schedule: c.schedule.type === 'crontab' ? { type: 'crontab', value: c.schedule.value.trim() } : c.schedule,
    timezone,
    checkinMarginMin: Math.min(c.checkinMargin ?? H.checkinMarginMin.default, H.checkinMarginMin.max),
    maxRuntimeMin: Math.min(Math.max(c.maxRuntime ?? H.maxRuntimeMin.default, H.maxRuntimeMin.min), H.maxRuntimeMin.max),
    failuresToDown: Math.min(c.failureIssueThreshold ?? H.failuresToDown.default, H.failuresToDown.max),
    recoveriesToUp: Math.min(c.recoveryThreshold ?? H.recoveriesToUp.default, H.recoveriesToUp.max),
  };
}

const sameConfig = (m: HeartbeatRow, c: HeartbeatConfig) =>
  JSON.stringify(m.schedule) === JSON.stringify(c.schedule) &&
  m.timezone === c.timezone &&
  m.checkin_margin_min === c.checkinMarginMin &&
  m.max_runtime_min === c.maxRuntimeMin &&
  m.failures_to_down === c.failuresToDown &&
  m.recoveries_to_up === c.recoveriesToUp;

export function createCheckInHandler(platform: ClientItemsPlatform): ClientItemsHandler {
  const { db } = platform;

  return async function handleCheckIns(messages: ClientItemsMessage[]): Promise<BatchSummary<CheckInDropReason>> {
    const summary: BatchSummary<CheckInDropReason> = { accepted: 0, duplicates: 0, dropped: {} };
    const counted: Record<string, number> = {};
    for (const m of messages) {
      for (const [index, item] of (m.checkIns ?? []).entries()) {
        const o = await db.transaction((tx) => checkInOne(tx, m, item, index));
        if (o.kind === 'drop') summary.dropped[o.reason] = (summary.dropped[o.reason] ?? 0) + 1;
        else if (o.kind === 'duplicate') summary.duplicates++;
        else {
          summary.accepted++;
          if (o.opened) counted.check_in_incidents_opened = (counted.check_in_incidents_opened ?? 0) + 1;
          if (o.ended) counted.check_in_incidents_ended = (counted.check_in_incidents_ended ?? 0) + 1;
        }
      }
    }
    if (Object.keys(counted).length) summary.counted = counted;
    return summary;
  };
}

async function checkInOne(tx: Queryable, m: ClientItemsMessage, item: CheckInItem, index: number): Promise<Outcome> {
  const at = m.receivedAt;
  // 1. slug
  const slug = monitorSlug(item.monitorSlug);
  if (!slug) return { kind: 'drop', reason: 'check_in_invalid_slug' };

  // 2. config
  const config = item.monitorConfig && heartbeatConfigOf(item.monitorConfig);
  if (config && 'problem' in config) return { kind: 'drop', reason: 'check_in_invalid_monitor_config' };

  // 3. monitor
  let monitor = await heartbeatsRepository.lockBySlug(tx, m.projectId, slug);
  if (!monitor) {
    if (!config) return { kind: 'drop', reason: 'check_in_unknown_monitor' };
    if (!(await heartbeatsRepository.projectExists(tx, m.projectId))) return { kind: 'drop', reason: 'check_in_unknown_project' };
    if ((await heartbeatsRepository.countMonitors(tx, m.projectId)) >= LIMITS.uptime.maxMonitorsPerProject)
      return { kind: 'drop', reason: 'check_in_monitor_limit' };
    await heartbeatsRepository.insert(tx, m.projectId, slug, config, nextScheduled(config.schedule, config.timezone, at), at);
    monitor = await heartbeatsRepository.lockBySlug(tx, m.projectId, slug);
    if (!monitor) throw new Error(`heartbeat ${slug} was not made`);
  } else if (config && !sameConfig(monitor, config)) {
    const rescheduled = JSON.stringify(monitor.schedule) !== JSON.stringify(config.schedule) || monitor.timezone !== config.timezone;
    const expectedAt =
      rescheduled || monitor.expected_at === null ? nextScheduled(config.schedule, config.timezone, at) : new Date(monitor.expected_at).getTime();
    await heartbeatsRepository.configure(tx, monitor.id, config, expectedAt, at);
    monitor = (await heartbeatsRepository.lock(tx, monitor.id))!;
  }
  if (monitor.paused) return { kind: 'drop', reason: 'check_in_monitor_paused' };

  // 4. record
  const durationMs = item.duration === undefined ? null : Math.min(Math.round(item.duration * 1000), MAX_MS);
  let checkInId = item.checkInId.trim().toLowerCase();
  if (NIL_IDS.has(checkInId)) {
    const running = item.status === 'in_progress' ? undefined : await heartbeatsRepository.latestRunning(tx, monitor.id);
    checkInId = running ?? `${m.batchId}:${index}`;
  }
  const row = { checkInId, at, durationMs, environment: item.environment, release: item.release };
  let newRun: boolean;
  if (item.status === 'in_progress') {
    const timeoutAt = at + monitor.max_runtime_min * 60_000;
    if (!(await heartbeatsRepository.insertCheckIn(tx, monitor, { ...row, status: 'in_progress', durationMs: null, timeoutAt }))) return { kind: 'duplicate' };
    newRun = true;
  } else if (await heartbeatsRepository.close(tx, monitor.id, checkInId, item.status, at, durationMs)) {
    newRun = false;
  } else {
    const existing = await heartbeatsRepository.checkIn(tx, monitor.id, checkInId);
    if (existing) return existing.status === item.status ? { kind: 'duplicate' } : { kind: 'drop', reason: 'check_in_already_closed' };
    await heartbeatsRepository.insertCheckIn(tx, monitor, { ...row, status: item.status, timeoutAt: null });
    newRun = true;
  }

  // 5. schedule
  if (newRun) {
    const expectedAt = monitor.expected_at === null ? null : new Date(monitor.expected_at).getTime();
    await heartbeatsRepository.expect(tx, monitor, nextExpectedAfterCheckIn(monitor.schedule, monitor.timezone, at, expectedAt, monitor.checkin_margin_min));
  }
  await heartbeatsRepository.noteCheckIn(tx, monitor.id, at, item.status);

  // 6. state
  let transition;
  if (item.status === 'ok') transition = await heartbeatsRepository.recordOutcome(tx, monitor, at, { ok: true });
  else if (item.status === 'error')
    transition = await heartbeatsRepository.recordOutcome(tx, monitor, at, {
      ok: false,
      error: 'failed',
      detail: `check-in ${checkInId.slice(0, 64)} reported an error`,
    });

  // 7. keep
  await heartbeatsRepository.prune(tx, monitor.id, H.checkInsKept);
  return { kind: 'accepted', opened: transition?.kind === 'down', ended: transition?.kind === 'up' };
}
