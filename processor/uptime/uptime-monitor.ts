import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { chTime } from '../time-text.ts';
import { sweepHeartbeats } from './heartbeat-sweep.ts';
import { createCheckAgent, runCheck, type CheckResult } from './http-check.ts';
import { monitorsRepository, type DueCheck } from './repositories/monitors-repository.ts';
import { sweepMaintenance } from './maintenance-sweep.ts';
import { sendUptimeAlert } from './uptime-alerts.ts';
import { idleBackoff } from '../../platform/idle-backoff.ts';

/**
 * The uptime monitor (issue 26), run by the processor role (and `npm start`), as many processes as there are, top to
 * bottom on every tick:
 *   1. claim    the monitors whose check is due, as many as free check slots (LIMITS.uptime.concurrency); claiming moves
 *               each one's next check an interval on in one UPDATE, so any number of processes check a monitor once per
 *               interval (repositories/monitors-repository.ts)
 *   2. check    each one over HTTPS through the outbound guard, connections kept alive per host (http-check.ts)
 *   3. record   the result: last check, consecutive failures, the hour's rollup, and the state: down after N consecutive
 *               failures (an incident opens), up after one success (it ends)
 *   4. alert    on a change: `uptime.down` / `uptime.up` project events (ids derived from the incident, so a retried
 *               publish sends nothing twice) and one mail per change to the project's alert recipients (the error
 *               alerts' list, without suppressed addresses; uptime-alerts.ts); never fails the check
 *   5. keep     every check in the analytical store (`uptime_checks`, 30 days), in batches at most once a second
 *   6. heartbeats  the cron monitors that check in rather than being checked (heartbeat-sweep.ts): check-ins past
 *               their maximum runtime time out, expected check-ins that did not come are missed, and their incidents'
 *               alerts go out as in 4
 *   7. maintenance  windows that started or ended get their uptime.maintenance.started / .completed events
 *               (maintenance-sweep.ts), at most every 15 s; a window's monitors open no incident while it is in
 *               progress (3 and 6 read its times themselves)
 * Stats count checks by outcome, and how late each check started after it was due.
 *
 * At rest (issue 44) the timer claims only when there can be something to claim. After a claim of the timer that found
 * nothing due, with no check running, one read (monitorsRepository.schedule) tells when the earliest claimable URL
 * monitor is due and the `uptime` change stamp (migration 0049), which moves with every commit that can make a check
 * due earlier than that: a URL monitor made, resumed, or told to check now. Until that time the timer claims nothing:
 * it reads the stamp once a second (STAMP_POLL_MS) and claims at once when it moved, and claims anyway every
 * CLAIM_FALLBACK_MS (a change the stamp missed: a restore, another clock). A scheduled check so starts at the first
 * tick at or after it is due (at most ~250 ms late); a new or resumed monitor, due at once, at the first stamp read
 * after its commit (within ~1 s, and `lateMs` counts that). While checks run or claims find work it claims at every
 * tick, as before; when a claim finds nothing though the schedule says a check is due already (another process holds
 * that row, or the schedule read failed) it backs off instead: 2 ticks later, then every 3 (CLAIM_IDLE_CAP_MS).
 * The heartbeat sweep (6) backs off from every second to every 4 s (HEARTBEAT_IDLE_CAP_MS) while it finds nothing to
 * time out, miss or alert: a check-in's times are minutes, so a missed one is judged at most 4 s after its grace ends
 * instead of 1 s. Maintenance (7) keeps its 15 s; `tick()` called by hand always claims and does both.
 */
export interface UptimeMonitorOptions {
  /** How often to look for due checks; false: only when `tick()` is called (tests with a manual clock). */
  tickMs?: number | false;
  concurrency?: number;
}

export interface UptimeMonitor {
  /** One round: claim what is due and start its checks. */
  tick(): Promise<void>;
  /** Resolves when every started check is recorded and the check rows are written. */
  idle(): Promise<void>;
  stats(): {
    checks: number;
    failures: number;
    transitions: number;
    lateMs: { max: number; over1s: number };
    heartbeats: { timeouts: number; missed: number; transitions: number; alerts: number };
    maintenance: { started: number; completed: number };
  };
  stop(): Promise<void>;
}

const PRUNE_MS = 60 * 60_000;
const MAX_BUFFERED_ROWS = 20_000;
const FLUSH_ROWS = 500;
const FLUSH_MS = 1000;
const SWEEP_MS = 1000;
/**
 * The longest wait between two claims while none finds anything though the schedule says a check is due already
 * (another process holds it), or the schedule could not be read (platform/idle-backoff.ts).
 */
export const CLAIM_IDLE_CAP_MS = 750;
/**
 * How often the timer reads the `uptime` change stamp while it waits for the next check (see the top): a new or
 * resumed monitor is first checked within about this long of its commit. One read by primary key a second, where a
 * claim every 750 ms was the database's largest cost at rest.
 */
export const STAMP_POLL_MS = 1000;
/** The longest the timer waits without claiming at rest, whatever the schedule and the stamp say (a change they missed). */
export const CLAIM_FALLBACK_MS = 60_000;
/** The longest wait between two heartbeat sweeps while none finds anything (a check-in's times are minutes). */
export const HEARTBEAT_IDLE_CAP_MS = 4_000;

export async function startUptimeMonitor(
  platform: Pick<Platform, 'db' | 'analytics' | 'bus' | 'clock' | 'mailer' | 'outbound' | 'logger' | 'config'>,
  opts: UptimeMonitorOptions = {},
): Promise<UptimeMonitor> {
  const { db, clock } = platform;
  const log = platform.logger.child({ component: 'uptime-monitor' });
  const concurrency = opts.concurrency ?? LIMITS.uptime.concurrency;
  const tickMs = typeof opts.tickMs === 'number' ? opts.tickMs : 250;
  const agent = createCheckAgent(platform.outbound);
  const inFlight = new Set<Promise<void>>();
  const alerting = new Set<Promise<void>>();
  let rows: Array<Record<string, unknown>> = [];
  let stopped = false;
  let ticking: Promise<void> | undefined;
  const stats = {
    checks: 0,
    failures: 0,
    transitions: 0,
    lateMs: { max: 0, over1s: 0 },
    heartbeats: { timeouts: 0, missed: 0, transitions: 0, alerts: 0 },
    maintenance: { started: 0, completed: 0 },
  };

  async function checkOne(due: DueCheck): Promise<void> {
    const startedAt = clock.now();
    const late = Math.max(0, startedAt - due.dueAt);
    stats.lateMs.max = Math.max(stats.lateMs.max, late);
    if (late > 1000) stats.lateMs.over1s++;
    // 2. check
    const result = await runCheck(due, { guard: platform.outbound, agent });
    stats.checks++;
    if (!result.ok) stats.failures++;
    // 3. record
    const transition = await monitorsRepository.record(db, due.id, startedAt, result);
    // 5. keep (batched)
    if (rows.length < MAX_BUFFERED_ROWS) rows.push(checkRow(due, startedAt, result));
    // 4. alert, without holding the check's slot (a slow bus or mail server must not stall checking)
    if (transition) {
      stats.transitions++;
      const p: Promise<void> = sendUptimeAlert(platform, transition)
        .catch((err) => log.error({ err, monitorId: due.id }, 'uptime alert failed'))
        .finally(() => alerting.delete(p));
      alerting.add(p);
    }
  }

  let flushedAt = 0;
  let sweptAt = 0;
  let maintenanceSweptAt = 0;
  /** Check rows go out in batches: at least a second apart unless 500 are waiting (ClickHouse favours few, larger inserts). */
  async function flushRows(force = false): Promise<void> {
    if (!rows.length || (!force && rows.length < FLUSH_ROWS && clock.now() - flushedAt < FLUSH_MS && clock.now() >= flushedAt)) return;
    flushedAt = clock.now();
    const batch = rows;
    rows = [];
    try {
      await platform.analytics.insert('uptime_checks', batch);
    } catch (err) {
      log.warn({ err, rows: batch.length }, 'writing uptime checks failed; kept for the next tick');
      if (rows.length + batch.length <= MAX_BUFFERED_ROWS) rows = [...batch, ...rows];
    }
  }

  /**
   * At rest (see the top): what the timer's last claim that found nothing learnt. `dueAt`: when the earliest claimable
   * URL monitor is due (platform.clock; Infinity: there is none); `stamp`: the `uptime` change stamp then;
   * `stampReadAt` and `fallbackAt` are monotonic (performance.now()). Undefined: claim at every tick, or back off.
   */
  let resting: { dueAt: number; stamp: string | null; stampReadAt: number; fallbackAt: number } | undefined;

  /** Whether the timer's tick claims: see the top. */
  async function timerClaims(): Promise<boolean> {
    const mono = performance.now();
    if (!resting) return claims.due(mono);
    if (clock.now() >= resting.dueAt || mono >= resting.fallbackAt) return true;
    // A tick a little early (timer jitter) still reads: half a tick of slack, as in platform/idle-backoff.ts.
    if (mono + tickMs / 2 < resting.stampReadAt + STAMP_POLL_MS) return false;
    resting.stampReadAt = mono;
    return (await monitorsRepository.changeStamp(db)) !== resting.stamp;
  }

  /** After the timer's claim found nothing and no check runs: rest until the next check is due, or back off when one is due already. */
  async function rest(): Promise<void> {
    resting = undefined;
    const s = await monitorsRepository.schedule(db);
    if (s.nextDueAt !== null && s.nextDueAt <= clock.now()) return;
    const mono = performance.now();
    resting = { dueAt: s.nextDueAt ?? Number.POSITIVE_INFINITY, stamp: s.stamp, stampReadAt: mono, fallbackAt: mono + CLAIM_FALLBACK_MS };
  }

  /** `fromTimer`: a tick of the timer, whose claim rests and whose heartbeat sweep backs off at rest (see the top). */
  async function tick(fromTimer = false): Promise<void> {
    if (stopped) return;
    const claim = !fromTimer || (await timerClaims());
    // 1. claim (skipped by the timer at rest: see the top)
    const due = claim ? await monitorsRepository.claimDue(db, clock.now(), concurrency - inFlight.size) : [];
    if (claim) {
      const busy = due.length > 0 || inFlight.size > 0;
      claims.looked(busy, performance.now());
      if (busy) resting = undefined;
      else if (fromTimer) await rest();
    }
    for (const d of due) {
      const p: Promise<void> = checkOne(d)
        .catch((err) => log.error({ err, monitorId: d.id }, 'uptime check could not be recorded'))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await flushRows();
    // 6. heartbeats, at most once a second on the timer (a check-in's times are minutes)
    const now = clock.now();
    if ((opts.tickMs === false || now - sweptAt >= SWEEP_MS || now < sweptAt) && (!fromTimer || beats.due(performance.now()))) {
      sweptAt = now;
      const h = await sweepHeartbeats(platform, now);
      if (fromTimer) beats.looked(h.timeouts + h.missed + h.transitions + h.alerts > 0, performance.now());
      for (const k of ['timeouts', 'missed', 'transitions', 'alerts'] as const) stats.heartbeats[k] += h[k];
    }
    // 7. maintenance, at most every 15 s on the timer
    if (opts.tickMs === false || now - maintenanceSweptAt >= LIMITS.statusIncidents.maintenanceSweepMs || now < maintenanceSweptAt) {
      maintenanceSweptAt = now;
      const w = await sweepMaintenance(platform, now);
      stats.maintenance.started += w.started;
      stats.maintenance.completed += w.completed;
    }
  }

  const claims = idleBackoff(tickMs, CLAIM_IDLE_CAP_MS);
  const beats = idleBackoff(SWEEP_MS, HEARTBEAT_IDLE_CAP_MS);
  const guardedTick = (fromTimer = false) => {
    if (ticking !== undefined) return ticking;
    ticking = tick(fromTimer)
      .catch((err) => log.error({ err }, 'uptime tick failed; retried'))
      .finally(() => (ticking = undefined));
    return ticking;
  };
  const timer = opts.tickMs === false ? undefined : setInterval(() => guardedTick(true), tickMs);
  timer?.unref();
  const pruneTimer = setInterval(() => {
    monitorsRepository.pruneRollups(db, clock.now() - LIMITS.uptime.rollupKeepDays * 86_400_000).catch((err) => log.warn({ err }, 'pruning rollups failed'));
  }, PRUNE_MS);
  pruneTimer.unref();

  /** Started checks recorded and their alerts sent (waiting at most `alertsWithinMs` for those), check rows written. */
  async function idle(alertsWithinMs = Number.POSITIVE_INFINITY): Promise<void> {
    while (ticking || inFlight.size) {
      await ticking;
      await Promise.all([...inFlight]);
    }
    let timer: NodeJS.Timeout | undefined;
    const waits: Array<Promise<unknown>> = [Promise.all([...alerting])];
    if (Number.isFinite(alertsWithinMs)) waits.push(new Promise<void>((r) => (timer = setTimeout(r, alertsWithinMs))));
    await Promise.race(waits);
    clearTimeout(timer);
    await flushRows(true);
  }

  return {
    tick: () => guardedTick(),
    idle: () => idle(),
    stats: () => ({ ...stats, lateMs: { ...stats.lateMs }, heartbeats: { ...stats.heartbeats }, maintenance: { ...stats.maintenance } }),
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      clearInterval(pruneTimer);
      if (alerting.size) log.info({ alerts: alerting.size }, 'waiting up to 10 s for uptime alerts to go out');
      await idle(10_000);
      agent.agent.destroy();
      agent.plain.destroy();
    },
  };
}

function checkRow(due: DueCheck, at: number, r: CheckResult): Record<string, unknown> {
  return {
    project_id: due.projectId,
    monitor_id: due.id,
    at: chTime(at),
    ok: r.ok ? 1 : 0,
    status: r.status,
    ms: r.ms,
    error: r.error ?? '',
    detail: r.detail ?? '',
  };
}
