import { nextScheduled } from '../../domain/uptime/heartbeat-schedule.ts';
import type { Platform } from '../../platform/platform.ts';
import { heartbeatsRepository, type UnalertedIncident } from './repositories/heartbeats-repository.ts';
import type { Transition } from './repositories/monitors-repository.ts';
import { sendUptimeAlert } from './uptime-alerts.ts';

/**
 * What the uptime monitor does for heartbeat monitors on every tick (issue 40), in order:
 *   1. timeout   an in-progress check-in past its maximum runtime is `timeout`, a failure of its monitor (`timeout`)
 *   2. missed    a heartbeat whose expected check-in has not come by its time and margin gets a `missed` check-in, a
 *                failure (`missed`), and expects the next one at the schedule's next time after now
 *   3. alert     every incident whose `uptime.down` / `uptime.up` alert has not gone out: a heartbeat's (the check-in
 *                pipeline opens and ends incidents too, without a mailer), and a URL monitor's whose alert has not gone
 *                out a minute after its check committed the incident (the bus was down, the process was killed); one
 *                alert (uptime-alerts.ts), its event id from the incident and its mail claimed once
 * Each change is made under its monitor's row lock and re-checked there, so any number of processes sweep at once and
 * each missed or timed-out check-in counts once.
 */
const BATCH = 100;
const ALERTS_PER_TICK = 20;

export interface SweepCounts {
  timeouts: number;
  missed: number;
  transitions: number;
  alerts: number;
}

export async function sweepHeartbeats(platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'mailer' | 'config' | 'logger'>, now: number): Promise<SweepCounts> {
  const { db } = platform;
  const counts: SweepCounts = { timeouts: 0, missed: 0, transitions: 0, alerts: 0 };
  // 0. anything at all? (at rest, one statement instead of the three reads below)
  if (!(await heartbeatsRepository.anyDue(db, now))) return counts;

  // 1. timeout
  for (const c of await heartbeatsRepository.overdueRunning(db, now, BATCH)) {
    const changed = await db.transaction(async (tx) => {
      const m = await heartbeatsRepository.lock(tx, c.monitor_id);
      if (!m || m.paused || !(await heartbeatsRepository.timeOut(tx, m.id, c.check_in_id, now))) return undefined;
      await heartbeatsRepository.noteCheckIn(tx, m.id, now, 'timeout');
      const detail = `check-in ${c.check_in_id.slice(0, 64)} ran past ${m.max_runtime_min} min`;
      return { t: await heartbeatsRepository.recordOutcome(tx, m, now, { ok: false, error: 'timeout', detail }) };
    });
    if (!changed) continue;
    counts.timeouts++;
    if (changed.t) counts.transitions++;
  }

  // 2. missed
  for (const id of await heartbeatsRepository.overdueMonitors(db, now, BATCH)) {
    const changed = await db.transaction(async (tx) => {
      const m = await heartbeatsRepository.lock(tx, id);
      if (!m || m.paused || new Date(m.next_check_at).getTime() > now) return undefined;
      const expectedAt = m.expected_at === null ? now : new Date(m.expected_at).getTime();
      await heartbeatsRepository.insertCheckIn(tx, m, {
        checkInId: `missed:${expectedAt}`,
        status: 'missed',
        at: expectedAt,
        durationMs: null,
        timeoutAt: null,
      });
      await heartbeatsRepository.expect(tx, m, nextScheduled(m.schedule, m.timezone, now));
      await heartbeatsRepository.noteCheckIn(tx, m.id, now, 'missed');
      const detail = `no check-in by ${new Date(expectedAt).toISOString()} (+${m.checkin_margin_min} min)`;
      return { t: await heartbeatsRepository.recordOutcome(tx, m, now, { ok: false, error: 'missed', detail }) };
    });
    if (!changed) continue;
    counts.missed++;
    if (changed.t) counts.transitions++;
  }

  // 3. alert
  for (const i of await heartbeatsRepository.unalerted(db, now, ALERTS_PER_TICK)) {
    for (const t of transitionsOf(i)) {
      try {
        await sendUptimeAlert(platform, t);
        counts.alerts++;
      } catch (err) {
        platform.logger.warn({ err, incidentId: i.id }, 'heartbeat alert failed; retried on the next tick');
        break;
      }
    }
  }
  return counts;
}

/** The alerts an incident still owes: its down, then (once ended) its up. */
function transitionsOf(i: UnalertedIncident): Transition[] {
  const base = {
    incidentId: i.id,
    monitorId: i.monitor_id,
    projectId: i.project_id,
    name: i.name,
    url: i.url,
    slug: i.slug ?? undefined,
    startedAt: new Date(i.started_at).getTime(),
    cause: { error: i.cause_error, status: i.cause_status, detail: i.cause_detail },
  };
  const out: Transition[] = [];
  if (i.down_mail_at === null) out.push({ ...base, kind: 'down', endedAt: null });
  if (i.ended_at !== null && i.up_mail_at === null) out.push({ ...base, kind: 'up', endedAt: new Date(i.ended_at).getTime() });
  return out;
}
