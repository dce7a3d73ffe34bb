import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { Environment } from '../../schemas/error-event.ts';
import { z } from 'zod';
import type { SymbolicatedFrame as StoredFrame } from '../../schemas/symbolicated-frame.ts';
import { SymbolicatedFrameSchema } from '../../schemas/api/errors.ts';
import type {
  AlertSettings,
  AlertSettingsPatch,
  BulkIssuesAnswer,
  DeployIssuesAnswer,
  ErrorSettings,
  ErrorSettingsPatch,
  Issue,
  IssueAction,
  IssueListQuery,
  IssueSample,
  IssueStatus,
  IssueSummary,
  IssueTagsAnswer,
  SymbolicatedFrame,
  UnignoreReason,
} from '../../schemas/api/errors.ts';
import type { Page } from '../../schemas/api/common.ts';
import { alertRecipientStates, reenableRecipients } from '../../domain/alert-recipients.ts';
import { issueMergesRepository } from './issue-merges-repository.ts';

/** The tag filter reads at most this many groups (a project holds at most 2,000 open groups per environment, §7.5). */
const TAGGED_GROUPS_MAX = 10_000;
/** The derived tags (processor/errors/facet-tags.ts), faceted first and in this order. */
const TAG_FACET_DERIVED = ['browser', 'os', 'device', 'release', 'environment', 'url', 'level', 'runtime'] as const;
const TAG_FACET_CUSTOM = 20;

/**
 * Error issues, error settings and alert settings in Postgres, for the errors API (spec §4.5).
 * Status changes follow the table of spec §3.1 and are single conditional UPDATEs, so two callers
 * racing cannot both apply a transition.
 */
interface GroupRow {
  id: string;
  fingerprint: string;
  name: string;
  message: string;
  stack: string;
  culprit: string | null;
  status: IssueStatus;
  count: string | number;
  env_counts: Record<string, number | string>;
  first_seen: Date | string;
  last_seen: Date | string;
  regression_count: number;
  suggestion: string | null;
  samples: Array<Record<string, unknown>>;
}

const iso = (d: Date | string) => new Date(d).toISOString();

interface DeployRefRow {
  id: string;
  gitSha: string | null;
  createdAt: string;
}
/** A deploy named by `idExpr` as a JSON object (issue 41), or NULL. */
const DEPLOY_REF = (idExpr: string) =>
  `(SELECT jsonb_build_object('id', d.id, 'gitSha', d.git_sha, 'createdAt', d.created_at) FROM deploys d WHERE d.id = ${idExpr})`;

function toIssueSummary(r: GroupRow): IssueSummary {
  return {
    groupId: r.id,
    id: r.id,
    name: r.name,
    message: r.message,
    status: r.status,
    count: Number(r.count),
    envCounts: Object.fromEntries(Object.entries(r.env_counts ?? {}).map(([k, v]) => [k, Number(v)])),
    firstSeen: iso(r.first_seen),
    lastSeen: iso(r.last_seen),
    regressionCount: r.regression_count,
    culprit: r.culprit,
    suggestion: r.suggestion,
  };
}

/**
 * A stored sample as the API answers it. Its `frames` were written by the processor (issue 37); a list that does not
 * read as frames (written by another version) is left out, so the issue still answers, with the plain stack.
 */
function toSample(s: Record<string, unknown>): IssueSample {
  const { frames, minifiedStack, ...rest } = s;
  const parsed = frames === undefined ? undefined : z.array(SymbolicatedFrameSchema).safeParse(frames);
  return {
    ...rest,
    ...(parsed?.success ? { frames: parsed.data } : {}),
    ...(typeof minifiedStack === 'string' ? { minifiedStack } : {}),
  };
}

function toIssue(r: GroupRow): Issue {
  const samples = (r.samples ?? []).map(toSample);
  // The group's stack is its newest occurrence's (groups-repository), which is the first sample.
  const newest = samples[0];
  return {
    ...toIssueSummary(r),
    fingerprint: r.fingerprint,
    stack: r.stack,
    frames: newest?.frames ?? null,
    minifiedStack: newest?.minifiedStack ?? null,
    samples,
  };
}

// The API's frame schema and the processor's frame type are one shape: a change to either that the other lacks fails
// to compile here.
type Agree<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const FRAME_SHAPES_AGREE: Agree<SymbolicatedFrame, StoredFrame> = true;

/** How the issue list can be ordered: most occurrences first, or most recently seen first (ties by id). */
type IssueSort = IssueListQuery['sort'];

/** Opaque list cursor: the sort key of the last row and its id (count desc or last seen desc, then id asc). */
function encodeCursor(key: number | string, id: string): string {
  return Buffer.from(JSON.stringify([key, id])).toString('base64url');
}

function decodeCursor(cursor: string, sort: IssueSort = 'count'): { key: number | string; id: string } {
  try {
    const [key, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    const keyOk = sort === 'count' ? typeof key === 'number' && Number.isSafeInteger(key) : typeof key === 'string' && !Number.isNaN(Date.parse(key));
    if (keyOk && typeof id === 'string') return { key: key as number | string, id };
  } catch {
    // fall through
  }
  throw new ServiceError('invalid_request', 'cursor is not one this API returned (for this sort)', {
    fields: [{ path: 'querystring.cursor', message: 'invalid cursor' }],
  });
}

/** A LIKE pattern that matches `text` literally anywhere. */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const SORT_COLUMN: Record<IssueSort, string> = { count: 'count', lastSeen: 'last_seen' };

/** Spec §3.1: which states each trigger leaves from, and where it goes. */
const TRANSITIONS: Record<IssueAction, { from: IssueStatus[]; to: IssueStatus }> = {
  resolve: { from: ['unresolved'], to: 'resolved' },
  ignore: { from: ['unresolved'], to: 'ignored' },
  reopen: { from: ['resolved', 'ignored', 'resolving'], to: 'unresolved' },
};

/** What an ignored issue waits for (issue 41); null: ignored forever. */
export type IgnoreCondition = { count: number } | { userCount: number } | { untilMs: number } | { escalating: true } | null;

/** Every transition starts the issue afresh: no ignore condition, no reason it came back, no user keys (0037). */
const CLEAR_TRIAGE = `resolved_deploy_id = NULL, ignore_count = NULL, ignore_count_base = NULL, ignore_user_count = NULL, ignore_until_at = NULL,
  ignore_until_escalating = false, ignored_at = NULL, unignored_reason = NULL, unignored_at = NULL`;

interface TriageRow {
  status: IssueStatus;
  count: string | number;
  ignore_count: string | number | null;
  ignore_count_base: string | number | null;
  ignore_user_count: number | null;
  users_seen: string | number;
  ignore_until_at: Date | string | null;
  ignore_until_escalating: boolean;
  ignored_at: Date | string | null;
  unignored_reason: UnignoreReason | null;
  unignored_at: Date | string | null;
  escalating_since: Date | string | null;
}

/** The issue's ignore condition while ignored, why it came back, and whether it is escalating (issue 41). */
function triageOf(t: TriageRow | undefined): Pick<Issue, 'ignoreUntil' | 'unignoredReason' | 'escalatingSince'> {
  if (!t) return { ignoreUntil: null, unignoredReason: null, escalatingSince: null };
  const ignoredAt = t.ignored_at ? iso(t.ignored_at) : null;
  let ignoreUntil: Issue['ignoreUntil'] = null;
  if (t.status === 'ignored') {
    if (t.ignore_count !== null)
      ignoreUntil = { condition: 'events', count: Number(t.ignore_count), seen: Number(t.count) - Number(t.ignore_count_base ?? t.count), ignoredAt };
    else if (t.ignore_user_count !== null) ignoreUntil = { condition: 'users', count: t.ignore_user_count, seen: Number(t.users_seen), ignoredAt };
    else if (t.ignore_until_at) ignoreUntil = { condition: 'time', at: iso(t.ignore_until_at), ignoredAt };
    else if (t.ignore_until_escalating) ignoreUntil = { condition: 'escalating', ignoredAt };
  }
  return {
    ignoreUntil,
    unignoredReason: t.unignored_reason && t.unignored_at ? { reason: t.unignored_reason, at: iso(t.unignored_at) } : null,
    escalatingSince: t.escalating_since ? iso(t.escalating_since) : null,
  };
}

async function ensureSettings(db: Queryable, projectId: string): Promise<void> {
  await db.query('INSERT INTO error_settings (project_id) VALUES ($1) ON CONFLICT (project_id) DO NOTHING', [projectId]);
}

export const errorsRepository = {
  async listIssues(
    db: Queryable,
    projectId: string,
    q: { status: IssueStatus; environment?: Environment; limit: number; cursor?: string; sort?: IssueSort; query?: string },
    /** Only these groups (the tag filter's, groupIdsWithTags). */
    groupIds?: string[],
  ): Promise<Page<IssueSummary>> {
    const sort = q.sort ?? 'count';
    const column = SORT_COLUMN[sort];
    const params: unknown[] = [projectId, q.status, q.limit + 1];
    let where = 'project_id = $1 AND status = $2';
    if (q.environment) {
      params.push(q.environment);
      where += ` AND env_counts ? $${params.length}`;
    }
    if (groupIds) {
      params.push(groupIds);
      where += ` AND id = ANY($${params.length}::text[])`;
    }
    const text = q.query?.trim();
    if (text) {
      params.push(containsPattern(text), text);
      const like = `$${params.length - 1}`;
      where += ` AND (name ILIKE ${like} OR message ILIKE ${like} OR culprit ILIKE ${like} OR id = $${params.length})`;
    }
    if (q.cursor) {
      const c = decodeCursor(q.cursor, sort);
      params.push(c.key, c.id);
      const k = `$${params.length - 1}${sort === 'lastSeen' ? '::timestamptz' : ''}`;
      where += ` AND (${column} < ${k} OR (${column} = ${k} AND id > $${params.length}))`;
    }
    const r = await db.query<GroupRow>(
      `SELECT id, fingerprint, name, message, '' AS stack, culprit, status, count, env_counts, first_seen, last_seen, regression_count, suggestion, '[]'::jsonb AS samples
         FROM error_groups WHERE ${where} ORDER BY ${column} DESC, id ASC LIMIT $3`,
      params,
    );
    const hasMore = r.rows.length > q.limit;
    const rows = r.rows.slice(0, q.limit);
    const last = rows[rows.length - 1];
    const cursorKey = (row: GroupRow) => (sort === 'count' ? Number(row.count) : new Date(row.last_seen).toISOString());
    return { data: rows.map(toIssueSummary), hasMore, nextCursor: hasMore && last ? encodeCursor(cursorKey(last), last.id) : null };
  },

  /**
   * The groups with an occurrence whose tags hold every one of `tags` (issue 40: the issue list's `key:value` filter),
   * at most TAGGED_GROUPS_MAX of them.
   */
  async groupIdsWithTags(analytics: AnalyticalStore, projectId: string, tags: Array<{ key: string; value: string }>): Promise<string[]> {
    const params: Record<string, unknown> = { projectId, max: TAGGED_GROUPS_MAX };
    const conds = tags.map((t, i) => {
      params[`k${i}`] = t.key;
      params[`v${i}`] = t.value;
      return `tags[{k${i}:String}] = {v${i}:String}`;
    });
    const rows = await analytics.query<{ group_id: string }>(
      `SELECT DISTINCT group_id FROM error_occurrences WHERE project_id = {projectId:String} AND ${conds.join(' AND ')} LIMIT {max:UInt32}`,
      params,
    );
    return rows.map((r) => r.group_id);
  },

  /**
   * Tag facets of one issue (issue 40): the occurrences in all, then the derived tags and the TAG_FACET_CUSTOM custom
   * tags on most occurrences, each with its top `values` values. Exact counts: read FINAL (re-delivered rows collapse).
   */
  async issueTagFacets(analytics: AnalyticalStore, projectId: string, groupIds: string[], values: number): Promise<IssueTagsAnswer> {
    // `groupIds`: the issue's and those merged into it (issue 41), whose occurrences keep their old ids.
    const where = 'project_id = {projectId:String} AND group_id IN {groupIds:Array(String)}';
    const params = { projectId, groupIds };
    const [total] = await analytics.query<{ n: number | string }>(`SELECT count() AS n FROM error_occurrences FINAL WHERE ${where}`, params);
    const keys = await analytics.query<{ key: string; n: number | string }>(
      `SELECT key, count() AS n FROM error_occurrences FINAL ARRAY JOIN mapKeys(tags) AS key WHERE ${where}
        GROUP BY key ORDER BY has({derived:Array(String)}, key) DESC, n DESC, key LIMIT {max:UInt32}`,
      { ...params, derived: [...TAG_FACET_DERIVED], max: TAG_FACET_DERIVED.length + TAG_FACET_CUSTOM },
    );
    if (!keys.length) return { total: Number(total?.n ?? 0), tags: [] };
    const top = await analytics.query<{ key: string; value: string; n: number | string }>(
      `SELECT key, value, count() AS n FROM error_occurrences FINAL ARRAY JOIN mapKeys(tags) AS key, mapValues(tags) AS value
        WHERE ${where} AND key IN {keys:Array(String)} GROUP BY key, value ORDER BY key, n DESC, value LIMIT {values:UInt32} BY key`,
      { ...params, keys: keys.map((k) => k.key), values },
    );
    const n = Number(total?.n ?? 0);
    const order = (k: string) => {
      const i = TAG_FACET_DERIVED.indexOf(k as (typeof TAG_FACET_DERIVED)[number]);
      return i === -1 ? TAG_FACET_DERIVED.length : i;
    };
    const tags = keys
      .map((k, i) => ({ k, i }))
      .sort((a, b) => order(a.k.key) - order(b.k.key) || a.i - b.i)
      .map(({ k }) => ({
        key: k.key,
        count: Number(k.n),
        values: top.filter((t) => t.key === k.key).map((t) => ({ value: t.value, count: Number(t.n), share: n ? Number(t.n) / n : 0 })),
      }));
    return { total: n, tags };
  },

  async issueExists(db: Queryable, projectId: string, groupId: string): Promise<boolean> {
    const r = await db.query('SELECT 1 FROM error_groups WHERE project_id = $1 AND id = $2', [projectId, groupId]);
    return r.rows.length > 0;
  },

  async getIssue(db: Queryable, projectId: string, groupId: string): Promise<Issue> {
    const r = await db.query<GroupRow>('SELECT * FROM error_groups_with_samples WHERE project_id = $1 AND id = $2', [projectId, groupId]);
    if (!r.rows[0]) throw new ServiceError('not_found', 'no such issue in this project');
    const issue = toIssue(r.rows[0]);
    // Issue 41: its deploys, and whether a resolving issue's next deploy is live (then it reads resolved).
    const d = await db.query<Record<'first' | 'last' | 'regressed' | 'marked' | 'resolved_by' | 'completed', DeployRefRow | null>>(
      `SELECT ${DEPLOY_REF('g.first_deploy_id')} AS first, ${DEPLOY_REF('g.last_deploy_id')} AS last, ${DEPLOY_REF('g.regressed_deploy_id')} AS regressed,
              ${DEPLOY_REF('g.resolve_deploy_id')} AS marked, ${DEPLOY_REF('g.resolved_deploy_id')} AS completed,
              ${DEPLOY_REF(`(SELECT n.id FROM deploys m, deploys n, projects p, deploys live
                              WHERE m.id = g.resolve_deploy_id AND p.id = g.project_id AND live.id = p.live_deploy_id AND live.status = 'ready'
                                AND n.project_id = g.project_id AND n.environment = 'production' AND n.status = 'ready'
                                AND (n.created_at, n.id) > (m.created_at, m.id) AND (n.created_at, n.id) <= (live.created_at, live.id)
                              ORDER BY n.created_at, n.id LIMIT 1)`)} AS resolved_by
         FROM error_groups g WHERE g.id = $1`,
      [groupId],
    );
    const row = d.rows[0];
    const ref = (x: DeployRefRow | null | undefined) => (x ? { id: x.id, gitSha: x.gitSha, createdAt: iso(x.createdAt) } : null);
    issue.firstSeenDeploy = ref(row?.first);
    issue.lastSeenDeploy = ref(row?.last);
    issue.regressedDeploy = ref(row?.regressed);
    const marked = ref(row?.marked);
    // Resolved by the deploy whose going live completed it (domain/issue-events/resolve-on-deploy.ts), else read from the live one.
    const completed = issue.status === 'resolved' ? ref(row?.completed) : null;
    issue.resolveInNextDeploy =
      marked && (issue.status === 'resolving' || completed) ? { markedAt: marked, resolvedBy: completed ?? ref(row?.resolved_by) } : null;
    if (issue.resolveInNextDeploy?.resolvedBy) issue.status = 'resolved';
    const t = await db.query<TriageRow>(
      `SELECT status, count, ignore_count, ignore_count_base, ignore_user_count, ignore_until_at, ignore_until_escalating, ignored_at,
              unignored_reason, unignored_at, escalating_since,
              CASE WHEN ignore_user_count IS NULL THEN 0 ELSE (SELECT count(*) FROM error_group_ignore_users u WHERE u.group_id = g.id) END AS users_seen
         FROM error_groups g WHERE g.id = $1`,
      [groupId],
    );
    Object.assign(issue, triageOf(t.rows[0]));
    // The issues merged into it (issue 41).
    issue.mergedFrom = await issueMergesRepository.mergedFrom(db, projectId, groupId);
    return issue;
  },

  /**
   * Ignore an unresolved issue (issue 41), forever (`until` null: the plain ignore) or until a condition: N more events
   * (counted from its count now), N more distinct users (their keys start empty), a time, or escalation.
   */
  async ignoreIssue(db: Queryable, projectId: string, groupId: string, until: IgnoreCondition, now: number): Promise<Issue> {
    const c: Partial<{ count: number; userCount: number; untilMs: number; escalating: true }> = until ?? {};
    // The distinct users of an earlier ignore are forgotten only by the ignore that takes effect: one statement, so
    // asking again of an issue already ignored (409) leaves its count of users seen so far as it was.
    const r = await db.query<{ id: string }>(
      `WITH g AS (
         UPDATE error_groups SET status = 'ignored', ignored_at = $3, unignored_reason = NULL, unignored_at = NULL,
                ignore_count = $4, ignore_count_base = CASE WHEN $4::bigint IS NULL THEN NULL ELSE count END, ignore_user_count = $5,
                ignore_until_at = $6, ignore_until_escalating = $7
          WHERE project_id = $1 AND id = $2 AND status = 'unresolved' RETURNING id
       ), forgotten AS (DELETE FROM error_group_ignore_users u USING g WHERE u.group_id = g.id)
       SELECT id FROM g`,
      [
        projectId,
        groupId,
        new Date(now).toISOString(),
        c.count ?? null,
        c.userCount ?? null,
        c.untilMs === undefined ? null : new Date(c.untilMs).toISOString(),
        c.escalating === true,
      ],
    );
    if (r.rows[0]) return errorsRepository.getIssue(db, projectId, groupId);
    return errorsRepository.transitionIssue(db, projectId, groupId, 'ignore');
  },

  /** Resolve in next deploy (issue 41): an unresolved issue becomes `resolving`, marked with the project's live deploy. */
  async resolveInNextDeploy(db: Queryable, projectId: string, groupId: string): Promise<Issue> {
    const r = await db.query<{ id: string }>(
      `UPDATE error_groups g SET status = 'resolving', resolve_deploy_id = d.id
         FROM projects p JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready'
        WHERE p.id = g.project_id AND g.project_id = $1 AND g.id = $2 AND g.status = 'unresolved' RETURNING g.id`,
      [projectId, groupId],
    );
    if (r.rows[0]) return errorsRepository.getIssue(db, projectId, groupId);
    const current = await db.query<{ status: IssueStatus }>('SELECT status FROM error_groups WHERE project_id = $1 AND id = $2', [projectId, groupId]);
    if (!current.rows[0]) throw new ServiceError('not_found', 'no such issue in this project');
    const status = current.rows[0].status;
    throw new ServiceError(
      'invalid_transition',
      status === 'unresolved' ? 'the project has no live deploy to resolve after' : `cannot resolve an issue that is ${status}`,
      { body: { status } },
    );
  },

  /** A deploy's issues (issue 41): first seen in it, regressed in it; 100 of each, most events first. */
  async deployIssues(db: Queryable, projectId: string, deployId: string): Promise<DeployIssuesAnswer> {
    const exists = await db.query('SELECT 1 FROM deploys WHERE project_id = $1 AND id = $2', [projectId, deployId]);
    if (!exists.rows[0]) throw new ServiceError('not_found', 'no such deploy in this project');
    const cols = `id, fingerprint, name, message, '' AS stack, culprit, status, count, env_counts, first_seen, last_seen, regression_count, suggestion, '[]'::jsonb AS samples`;
    const of = async (column: 'first_deploy_id' | 'regressed_deploy_id') =>
      (
        await db.query<GroupRow>(`SELECT ${cols} FROM error_groups WHERE project_id = $1 AND ${column} = $2 ORDER BY count DESC, id LIMIT 100`, [
          projectId,
          deployId,
        ])
      ).rows.map(toIssueSummary);
    return { introduced: await of('first_deploy_id'), regressed: await of('regressed_deploy_id') };
  },

  async transitionIssue(db: Queryable, projectId: string, groupId: string, action: IssueAction): Promise<Issue> {
    const t = TRANSITIONS[action];
    const r = await db.query<{ id: string }>(
      `UPDATE error_groups SET status = $3, ${CLEAR_TRIAGE} WHERE project_id = $1 AND id = $2 AND status = ANY($4::text[]) RETURNING id`,
      [projectId, groupId, t.to, t.from],
    );
    // The issue as GET shows it, its samples included (they live beside the group, not in its row).
    if (r.rows[0]) return errorsRepository.getIssue(db, projectId, groupId);
    const current = await db.query<{ status: IssueStatus }>('SELECT status FROM error_groups WHERE project_id = $1 AND id = $2', [projectId, groupId]);
    if (!current.rows[0]) throw new ServiceError('not_found', 'no such issue in this project');
    throw new ServiceError('invalid_transition', `cannot ${action} an issue that is ${current.rows[0].status}`, {
      body: { status: current.rows[0].status },
    });
  },

  /**
   * One transition for several issues at once (the console's bulk actions): a single conditional UPDATE, so
   * each issue moves at most once; the ones not in a state the action leaves from are named with their status.
   */
  async transitionIssues(db: Queryable, projectId: string, groupIds: string[], action: IssueAction): Promise<BulkIssuesAnswer> {
    const t = TRANSITIONS[action];
    const ids = [...new Set(groupIds)];
    const r = await db.query<GroupRow>(
      `UPDATE error_groups SET status = $3, ${CLEAR_TRIAGE} WHERE project_id = $1 AND id = ANY($2::text[]) AND status = ANY($4::text[])
        RETURNING id, fingerprint, name, message, '' AS stack, culprit, status, count, env_counts, first_seen, last_seen, regression_count, suggestion, '[]'::jsonb AS samples`,
      [projectId, ids, t.to, t.from],
    );
    const moved = new Set(r.rows.map((row) => row.id));
    const rest = ids.filter((id) => !moved.has(id));
    const current = rest.length
      ? await db.query<{ id: string; status: IssueStatus }>('SELECT id, status FROM error_groups WHERE project_id = $1 AND id = ANY($2::text[])', [
          projectId,
          rest,
        ])
      : { rows: [] };
    const statusOf = new Map(current.rows.map((row) => [row.id, row.status]));
    const skipped = rest.map((groupId) => {
      const status = statusOf.get(groupId);
      return status
        ? { groupId, error: 'invalid_transition' as const, message: `cannot ${action} an issue that is ${status}`, status }
        : { groupId, error: 'not_found' as const, message: 'no such issue in this project', status: null };
    });
    return { updated: r.rows.map(toIssueSummary), skipped };
  },

  async getErrorSettings(db: Queryable, projectId: string): Promise<ErrorSettings> {
    await ensureSettings(db, projectId);
    const r = await db.query<{ paused: boolean; ingest_origins: string[] }>('SELECT paused, ingest_origins FROM error_settings WHERE project_id = $1', [
      projectId,
    ]);
    return { paused: r.rows[0]!.paused, ingestOrigins: r.rows[0]!.ingest_origins ?? [] };
  },

  async updateErrorSettings(db: Queryable, projectId: string, patch: ErrorSettingsPatch, now: number): Promise<ErrorSettings> {
    await ensureSettings(db, projectId);
    await db.query(
      `UPDATE error_settings SET paused = COALESCE($2, paused), ingest_origins = COALESCE($3::text[], ingest_origins), updated_at = $4 WHERE project_id = $1`,
      [projectId, patch.paused ?? null, patch.ingestOrigins ?? null, new Date(now).toISOString()],
    );
    return errorsRepository.getErrorSettings(db, projectId);
  },

  async getAlertSettings(db: Queryable, projectId: string): Promise<AlertSettings> {
    await ensureSettings(db, projectId);
    const s = await db.query<{ alerts_enabled: boolean }>('SELECT alerts_enabled FROM error_settings WHERE project_id = $1', [projectId]);
    const r = await db.query<{ email: string }>('SELECT email FROM project_alert_recipients WHERE project_id = $1 ORDER BY email', [projectId]);
    const suppressed = (await alertRecipientStates(db, projectId)).flatMap((x) => (x.suppressed ? [{ email: x.email, ...x.suppressed }] : []));
    return { enabled: s.rows[0]!.alerts_enabled, recipients: r.rows.map((x) => x.email), suppressed };
  },

  async updateAlertSettings(
    db: Queryable & { transaction?: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T> },
    projectId: string,
    patch: AlertSettingsPatch,
    now: number,
  ): Promise<AlertSettings> {
    const apply = async (tx: Queryable) => {
      await ensureSettings(tx, projectId);
      if (patch.enabled !== undefined) {
        await tx.query('UPDATE error_settings SET alerts_enabled = $2, updated_at = $3 WHERE project_id = $1', [
          projectId,
          patch.enabled,
          new Date(now).toISOString(),
        ]);
      }
      // Only addresses this project would mail: a project cannot lift another's suppression of a stranger's address.
      if (patch.reenable?.length) {
        const mine = new Set((await alertRecipientStates(tx, projectId)).map((x) => x.email.toLowerCase()));
        await reenableRecipients(
          tx,
          patch.reenable.filter((e) => mine.has(e)),
        );
      }
      if (patch.recipients) {
        await tx.query('DELETE FROM project_alert_recipients WHERE project_id = $1', [projectId]);
        if (patch.recipients.length) {
          await tx.query('INSERT INTO project_alert_recipients (project_id, email) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [
            projectId,
            patch.recipients,
          ]);
        }
      }
    };
    if (db.transaction) await db.transaction(apply);
    else await apply(db);
    return errorsRepository.getAlertSettings(db, projectId);
  },

  /**
   * Claim the project's test-alert slot: one per `windowMs`. Returns the previous claim time (to give
   * the slot back if sending fails), or the seconds to wait.
   */
  async claimTestAlert(
    db: Queryable,
    projectId: string,
    now: number,
    windowMs: number,
  ): Promise<{ ok: true; previous: string | null } | { ok: false; retryAfterSec: number }> {
    await ensureSettings(db, projectId);
    const before = await db.query<{ last_test_alert_at: Date | string | null }>('SELECT last_test_alert_at FROM error_settings WHERE project_id = $1', [
      projectId,
    ]);
    const previous = before.rows[0]?.last_test_alert_at ? iso(before.rows[0].last_test_alert_at) : null;
    const r = await db.query(
      `UPDATE error_settings SET last_test_alert_at = $2
        WHERE project_id = $1 AND (last_test_alert_at IS NULL OR last_test_alert_at <= $3) RETURNING project_id`,
      [projectId, new Date(now).toISOString(), new Date(now - windowMs).toISOString()],
    );
    if (r.rowCount > 0 && r.rows.length > 0) return { ok: true, previous };
    const cur = await db.query<{ last_test_alert_at: Date | string }>('SELECT last_test_alert_at FROM error_settings WHERE project_id = $1', [projectId]);
    const last = new Date(cur.rows[0]!.last_test_alert_at).getTime();
    return { ok: false, retryAfterSec: Math.max(1, Math.ceil((last + windowMs - now) / 1000)) };
  },

  async releaseTestAlert(db: Queryable, projectId: string, claimedAt: number, previous: string | null): Promise<void> {
    await db.query('UPDATE error_settings SET last_test_alert_at = $3 WHERE project_id = $1 AND last_test_alert_at = $2', [
      projectId,
      new Date(claimedAt).toISOString(),
      previous,
    ]);
  },
};
