import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { publishIssueEvents, type IssueEventItem } from '../../domain/issue-events/issue-events.ts';
import { type HourlyCounts, type TriageGroup, triageRepository } from './repositories/triage-repository.ts';

/**
 * The issue triage sweep (issue 41), run by the processor role every minute, as many processes as there are:
 *  1. expire     ignored issues whose `ignoreUntil` / `ignoreDuration` time has come are unresolved again, reason `time`
 *                (at most BATCH a pass; the batch step also brings one back when an event comes after its time)
 *  2. find       the candidates: the groups with at least `minEvents` occurrences in the last hour (ClickHouse, the
 *                busiest `candidates` first), and the groups marked escalating (to see whether they calmed down)
 *  3. judge      each one's last hour against its baseline: its average hourly occurrences over the 7 days before that
 *                hour, counting only the hours it existed (an issue with less than an hour of history has none and does
 *                not escalate); escalating: last hour >= minEvents and > multiple x baseline (3x, 10 by default)
 *  4. calm       a marked group no longer escalating loses its mark (escalating_since)
 *  5. escalate   unresolved and ignored-until-escalating groups that escalate, not already marked, and not escalated in
 *                the last 24 hours: marked in one conditional UPDATE (a concurrent sweep marks a group once); the ignored
 *                ones are unresolved again, reason `escalating`
 *  6. publish    issue.escalating per group with the evidence, its id naming the escalation (no double send); then the
 *                `onEscalating` hook (alert rules). A failure is logged: the mark stands.
 * Nothing here counts as a regression. The clock is the caller's `now` (tests pass their own).
 */
export interface IssueTriageSweepDeps {
  /** How many times its baseline an issue's last hour must be above; 3 by default. */
  multiple?: number;
  /** The least events in the last hour to escalate; 10 by default. */
  minEvents?: number;
  /** Groups judged per pass at most; 1,000 by default. */
  candidates?: number;
  /** An issue escalates again only once calm and at least this long after its last escalation; 24 h by default. */
  againAfterMs?: number;
  /** Called after issue.escalating is published, with the groups that escalated (alert rules wire a trigger here). */
  onEscalating?: (items: Array<{ projectId: string; groupId: string; environment: string | null }>) => Promise<void>;
}

export interface TriageCounts {
  unignored: number;
  escalated: number;
  calmed: number;
}

export const ESCALATION = { multiple: 3, minEvents: 10, candidates: 1000, againAfterMs: 24 * 3_600_000, sweepMs: 60_000 } as const;
const HOUR = 3_600_000;
const WEEK_HOURS = 7 * 24;
const BATCH = 1000;

type SweepPlatform = Pick<Platform, 'db' | 'analytics' | 'bus' | 'clock' | 'config' | 'logger'>;

export async function sweepIssueTriage(platform: SweepPlatform, now: number, deps: IssueTriageSweepDeps = {}): Promise<TriageCounts> {
  const { db, analytics } = platform;
  const multiple = deps.multiple ?? ESCALATION.multiple;
  const minEvents = deps.minEvents ?? ESCALATION.minEvents;
  const limit = deps.candidates ?? ESCALATION.candidates;
  // 1. expire
  const unignored = await triageRepository.expireIgnores(db, now, BATCH);

  // 2. find
  const hourAgo = now - HOUR;
  const weekAgo = hourAgo - WEEK_HOURS * HOUR;
  const busy = await triageRepository.busyGroups(analytics, hourAgo, now, minEvents, limit);
  const ids = [...new Set([...busy.map((b) => b.group_id), ...(await triageRepository.escalatingIds(db, limit))])];
  const projectOf = new Map(busy.map((b) => [b.group_id, b.project_id]));
  // A group is judged in its own project only (an occurrence row names both).
  const groups = (await triageRepository.groups(db, ids)).filter((g) => (projectOf.get(g.id) ?? g.project_id) === g.project_id);

  // 3. judge
  const counts = await triageRepository.hourlyCounts(analytics, groups, weekAgo, hourAgo, now);
  const judged = groups.map((g) => judge(g, counts, { multiple, minEvents, weekAgo, hourAgo }));

  // 4. calm
  const calmed = await triageRepository.calm(
    db,
    judged.filter((j) => j.group.escalating_since !== null && !j.escalating).map((j) => j.group.id),
  );

  // 5. escalate
  const candidates = judged.filter(
    (j) =>
      j.escalating &&
      j.group.escalating_since === null &&
      (j.group.status === 'unresolved' || (j.group.status === 'ignored' && j.group.ignore_until_escalating)),
  );
  const marked = await triageRepository.escalate(
    db,
    candidates.map((j) => j.group.id),
    now,
    deps.againAfterMs ?? ESCALATION.againAfterMs,
  );

  // 6. publish
  const byId = new Map(candidates.map((j) => [j.group.id, j]));
  const byProject = new Map<string, IssueEventItem[]>();
  for (const m of marked) {
    const j = byId.get(m.id)!;
    const items = byProject.get(m.project_id) ?? [];
    items.push({
      groupId: m.id,
      event: 'issue.escalating',
      environment: j.environment,
      escalation: {
        since: new Date(now).toISOString(),
        lastHourCount: j.lastHour,
        baselinePerHour: Math.round(j.baseline * 1000) / 1000,
        multiple,
        unignored: m.unignored,
      },
    });
    byProject.set(m.project_id, items);
  }
  for (const [projectId, items] of byProject) {
    try {
      await publishIssueEvents(platform, publicBaseUrl(platform.config), projectId, items);
    } catch (err) {
      platform.logger.error({ err, projectId }, 'issue.escalating could not be published');
    }
  }
  if (deps.onEscalating && marked.length) {
    try {
      await deps.onEscalating(
        [...byProject].flatMap(([projectId, items]) => items.map((i) => ({ projectId, groupId: i.groupId, environment: i.environment }))),
      );
    } catch (err) {
      platform.logger.error({ err }, 'the onEscalating hook failed');
    }
  }
  return { unignored, escalated: marked.length, calmed };
}

interface Judged {
  group: TriageGroup;
  escalating: boolean;
  lastHour: number;
  baseline: number;
  /** production when the last hour had any there, else its busiest environment. */
  environment: string | null;
}

function judge(group: TriageGroup, counts: HourlyCounts[], o: { multiple: number; minEvents: number; weekAgo: number; hourAgo: number }): Judged {
  const mine = counts.filter((c) => c.group_id === group.id);
  const lastHour = mine.reduce((n, c) => n + c.last_hour, 0);
  const before = mine.reduce((n, c) => n + c.before, 0);
  // The hours of the baseline window the issue existed in (whole window: 168).
  const hours = Math.min(WEEK_HOURS, (o.hourAgo - Math.max(o.weekAgo, new Date(group.first_seen).getTime())) / HOUR);
  const baseline = hours >= 1 ? before / hours : Number.POSITIVE_INFINITY;
  const busiest = mine.filter((c) => c.last_hour > 0).sort((a, b) => b.last_hour - a.last_hour || a.environment.localeCompare(b.environment));
  const environment = busiest.some((c) => c.environment === 'production') ? 'production' : (busiest[0]?.environment ?? null);
  return {
    group,
    escalating: lastHour >= o.minEvents && lastHour > o.multiple * baseline,
    lastHour,
    baseline: Number.isFinite(baseline) ? baseline : 0,
    environment,
  };
}

export interface IssueTriageSweeper {
  /** One pass now (one at a time; a pass already running is awaited instead). */
  tick(): Promise<TriageCounts | undefined>;
  stop(): Promise<void>;
}

/** The sweep on a timer (every minute by default; false: only `tick()`), started and stopped by service/. */
export function startIssueTriageSweep(platform: SweepPlatform, opts: IssueTriageSweepDeps & { intervalMs?: number | false } = {}): IssueTriageSweeper {
  const log = platform.logger.child({ component: 'issue-triage-sweep' });
  let running: Promise<TriageCounts | undefined> | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) return Promise.resolve(undefined);
    running ??= sweepIssueTriage(platform, platform.clock.now(), opts)
      .then((c) => {
        if (c.unignored || c.escalated || c.calmed) log.info(c, 'issue triage');
        return c;
      })
      .catch((err) => {
        log.error({ err }, 'issue triage sweep failed; retried on the next tick');
        return undefined;
      })
      .finally(() => (running = undefined));
    return running;
  };
  const timer = opts.intervalMs === false ? undefined : setInterval(tick, opts.intervalMs ?? ESCALATION.sweepMs);
  timer?.unref();
  return {
    tick,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
