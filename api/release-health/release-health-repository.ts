import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { Environment } from '../../schemas/error-event.ts';
import type { HealthInterval, HealthPoint, HealthTotals } from '../../schemas/api/release-health.ts';
import { totalsOf, type MetricRow } from './health-numbers.ts';

/**
 * Reading release health back: ClickHouse `release_sessions` (written by processor/release-health/, whose
 * steps/row-step.ts says what a row holds) as Sentry's numbers, and the deploys they name. Every query reads FINAL,
 * so a row written twice counts once, and is bounded by a range of session start buckets. Per group:
 *   sessions  distinct session ids with an init update, plus the sessions of aggregates
 *   crashed   distinct session ids with a crashed or unhandled update, plus aggregates' crashed and unhandled
 *             (abnormal alike); `unhandled` the unhandled part on its own
 *   errored   distinct session ids that saw an error, less those that crashed or ended abnormally, plus aggregates'
 *             errored (already exclusive)
 */
export interface HealthRange {
  projectId: string;
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  environment?: Environment;
  /** One deploy id, or a release string counted without a deploy. */
  deploy?: string;
}

export interface HealthGroup {
  deployId: string | null;
  release: string | null;
}

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
const isoOf = (t: string) => `${t.replace(' ', 'T')}.000Z`;

const METRICS = `
  uniqExactIf(session_id, kind = 'update' AND started > 0) AS started_u, sumIf(started, kind = 'aggregate') AS started_a,
  uniqExactIf(session_id, kind = 'update' AND (crashed > 0 OR unhandled > 0)) AS crashed_u, sumIf(crashed + unhandled, kind = 'aggregate') AS crashed_a,
  uniqExactIf(session_id, kind = 'update' AND unhandled > 0) AS unhandled_u, sumIf(unhandled, kind = 'aggregate') AS unhandled_a,
  uniqExactIf(session_id, kind = 'update' AND abnormal > 0) AS abnormal_u, sumIf(abnormal, kind = 'aggregate') AS abnormal_a,
  uniqExactIf(session_id, kind = 'update' AND (errored > 0 OR crashed > 0 OR unhandled > 0 OR abnormal > 0)) AS errored_all_u, sumIf(errored, kind = 'aggregate') AS errored_a,
  uniqExactIf(distinct_id, distinct_id != '') AS users, uniqExactIf(distinct_id, distinct_id != '' AND (crashed > 0 OR unhandled > 0)) AS crashed_users`;
/** The group: the deploy, or (none named) the release string as sent. */
const GROUP = `deploy_id AS d, if(deploy_id = '', release, '') AS r`;

function where(r: HealthRange): { sql: string; params: Record<string, unknown> } {
  const parts = [
    'project_id = {p:String}',
    "bucket >= toDateTime({from:DateTime64(3, 'UTC')}, 'UTC')",
    "bucket < toDateTime({to:DateTime64(3, 'UTC')}, 'UTC')",
  ];
  const params: Record<string, unknown> = { p: r.projectId, from: chTime(r.from), to: chTime(r.to) };
  if (r.environment) {
    parts.push('environment = {env:String}');
    params.env = r.environment;
  }
  if (r.deploy !== undefined) {
    parts.push("(deploy_id = {dep:String} OR (deploy_id = '' AND release = {dep:String}))");
    params.dep = r.deploy;
  }
  return { sql: parts.join(' AND '), params };
}

const groupOf = (x: { d: string; r: string }): HealthGroup => (x.d ? { deployId: x.d, release: null } : { deployId: null, release: x.r });
const keyOf = (g: HealthGroup) => (g.deployId !== null ? `d:${g.deployId}` : `r:${g.release}`);

export const releaseHealthRepository = {
  /** Totals per deploy (or release string) over the range, most sessions first. */
  async totalsByGroup(analytics: AnalyticalStore, r: HealthRange, limit: number): Promise<Array<HealthGroup & { totals: HealthTotals }>> {
    const w = where(r);
    const rows = await analytics.query<MetricRow & { d: string; r: string }>(
      `SELECT ${GROUP}, ${METRICS} FROM release_sessions FINAL WHERE ${w.sql} GROUP BY d, r
        ORDER BY started_u + started_a DESC, d, r LIMIT {limit:UInt32}`,
      { ...w.params, limit },
    );
    return rows.map((x) => ({ ...groupOf(x), totals: totalsOf(x) }));
  },

  /** Per group among `groups`, one point per interval of the range (empty ones included). */
  async seriesByGroup(analytics: AnalyticalStore, r: HealthRange, interval: HealthInterval, groups: HealthGroup[]): Promise<Map<string, HealthPoint[]>> {
    const out = new Map<string, HealthPoint[]>();
    if (!groups.length) return out;
    const w = where(r);
    const fn = interval === 'hour' ? 'toStartOfHour' : 'toStartOfDay';
    const rows = await analytics.query<MetricRow & { d: string; r: string; b: string }>(
      `SELECT ${GROUP}, toString(${fn}(bucket)) AS b, ${METRICS} FROM release_sessions FINAL
        WHERE ${w.sql} AND (deploy_id IN {ds:Array(String)} OR (deploy_id = '' AND release IN {rs:Array(String)})) GROUP BY d, r, b ORDER BY b`,
      {
        ...w.params,
        ds: groups.flatMap((g) => (g.deployId !== null ? [g.deployId] : [])),
        rs: groups.flatMap((g) => (g.deployId === null ? [g.release ?? ''] : [])),
      },
    );
    const found = new Map<string, Map<string, MetricRow>>();
    for (const x of rows) {
      const k = keyOf(groupOf(x));
      let m = found.get(k);
      if (!m) found.set(k, (m = new Map()));
      m.set(isoOf(x.b), x);
    }
    const step = interval === 'hour' ? 3_600_000 : 86_400_000;
    for (const g of groups) {
      const k = keyOf(g);
      const points: HealthPoint[] = [];
      for (let t = Math.floor(r.from / step) * step; t < r.to && points.length < 10_000; t += step) {
        const bucket = new Date(t).toISOString();
        points.push({ bucket, ...totalsOf(found.get(k)?.get(bucket)) });
      }
      out.set(k, points);
    }
    return out;
  },

  keyOf,

  /** The project's live deploy id, or null. */
  async liveDeployId(db: Queryable, projectId: string): Promise<string | null> {
    const r = await db.query<{ live_deploy_id: string | null }>('SELECT live_deploy_id FROM projects WHERE id = $1', [projectId]);
    return r.rows[0]?.live_deploy_id ?? null;
  },

  /** Whether the deploy is the project's. */
  async deployExists(db: Queryable, projectId: string, deployId: string): Promise<boolean> {
    const r = await db.query('SELECT 1 FROM deploys WHERE project_id = $1 AND id = $2', [projectId, deployId]);
    return r.rows.length > 0;
  },
};
