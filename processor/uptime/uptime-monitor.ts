import { alertRecipients } from '../../domain/alert-recipients.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { chTime } from '../time-text.ts';
import { createCheckAgent, runCheck, type CheckResult } from './http-check.ts';
import { monitorsRepository, type DueCheck, type Transition } from './repositories/monitors-repository.ts';

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
 *               alerts' list, without suppressed addresses); never fails the check
 *   5. keep     every check in the analytical store (`uptime_checks`, 30 days), in batches at most once a second
 * Stats count checks by outcome, and how late each check started after it was due.
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
  stats(): { checks: number; failures: number; transitions: number; lateMs: { max: number; over1s: number } };
  stop(): Promise<void>;
}

const PRUNE_MS = 60 * 60_000;
const MAX_BUFFERED_ROWS = 20_000;
const FLUSH_ROWS = 500;
const FLUSH_MS = 1000;

export async function startUptimeMonitor(
  platform: Pick<Platform, 'db' | 'analytics' | 'bus' | 'clock' | 'mailer' | 'outbound' | 'logger' | 'config'>,
  opts: UptimeMonitorOptions = {},
): Promise<UptimeMonitor> {
  const { db, clock } = platform;
  const log = platform.logger.child({ component: 'uptime-monitor' });
  const concurrency = opts.concurrency ?? LIMITS.uptime.concurrency;
  const agent = createCheckAgent(platform.outbound);
  const inFlight = new Set<Promise<void>>();
  const alerting = new Set<Promise<void>>();
  let rows: Array<Record<string, unknown>> = [];
  let stopped = false;
  let ticking: Promise<void> | undefined;
  const stats = { checks: 0, failures: 0, transitions: 0, lateMs: { max: 0, over1s: 0 } };

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
      const p: Promise<void> = alert(transition)
        .catch((err) => log.error({ err, monitorId: due.id }, 'uptime alert failed'))
        .finally(() => alerting.delete(p));
      alerting.add(p);
    }
  }

  async function alert(t: Transition): Promise<void> {
    await publishProjectEvent(platform, { id: `uptime.${t.kind}:${t.incidentId}`, projectId: t.projectId, event: `uptime.${t.kind}`, data: eventData(t) });
    if (!(await monitorsRepository.claimMail(db, t.incidentId, t.kind, clock.now()))) return;
    const to = await alertRecipients(db, t.projectId);
    if (!to.length) return;
    await platform.mailer.send(alertMail(t, to, publicBaseUrl(platform.config)));
  }

  let flushedAt = 0;
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

  async function tick(): Promise<void> {
    if (stopped) return;
    // 1. claim
    const due = await monitorsRepository.claimDue(db, clock.now(), concurrency - inFlight.size);
    for (const d of due) {
      const p: Promise<void> = checkOne(d)
        .catch((err) => log.error({ err, monitorId: d.id }, 'uptime check could not be recorded'))
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await flushRows();
  }

  const guardedTick = () => {
    if (ticking !== undefined) return ticking;
    ticking = tick()
      .catch((err) => log.error({ err }, 'uptime tick failed; retried'))
      .finally(() => (ticking = undefined));
    return ticking;
  };
  const timer = opts.tickMs === false ? undefined : setInterval(guardedTick, opts.tickMs ?? 250);
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
    tick: guardedTick,
    idle: () => idle(),
    stats: () => ({ ...stats, lateMs: { ...stats.lateMs } }),
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      clearInterval(pruneTimer);
      if (alerting.size) log.info({ alerts: alerting.size }, 'waiting up to 10 s for uptime alerts to go out');
      await idle(10_000);
      agent.agent.destroy();
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

/** `data` of uptime.down and uptime.up. */
function eventData(t: Transition): Record<string, unknown> {
  return {
    monitor: { id: t.monitorId, name: t.name, url: t.url },
    incident: {
      id: t.incidentId,
      startedAt: new Date(t.startedAt).toISOString(),
      endedAt: t.endedAt === null ? null : new Date(t.endedAt).toISOString(),
      durationSec: t.endedAt === null ? null : Math.round((t.endedAt - t.startedAt) / 1000),
      cause: t.cause,
    },
  };
}

function alertMail(t: Transition, to: string[], base: string) {
  const link = `${base}/projects`;
  const cause = `${t.cause.error}${t.cause.status ? ` (HTTP ${t.cause.status})` : ''}${t.cause.detail ? `: ${t.cause.detail}` : ''}`;
  if (t.kind === 'down')
    return {
      to,
      subject: `[down] ${t.name} is not answering`,
      text: [`${t.name} (${t.url}) is down since ${new Date(t.startedAt).toISOString()}.`, '', `Cause: ${cause}`, '', `Monitors: ${link}`].join('\n'),
    };
  const minutes = Math.max(1, Math.round(((t.endedAt ?? t.startedAt) - t.startedAt) / 60_000));
  return {
    to,
    subject: `[up] ${t.name} is back after ${minutes} min`,
    text: [`${t.name} (${t.url}) answers again, after ${minutes} min down.`, '', `It went down with: ${cause}`, '', `Monitors: ${link}`].join('\n'),
  };
}
