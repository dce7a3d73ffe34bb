import type { Queryable } from '../../platform/ports/relational-store.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { Environment } from '../../schemas/error-event.ts';

/**
 * Error issues, error settings and alert settings in Postgres, for the errors API (spec §4.5).
 * Status changes follow the table of spec §3.1 and are single conditional UPDATEs, so two callers
 * racing cannot both apply a transition.
 */
export type IssueStatus = 'unresolved' | 'resolved' | 'ignored';

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

export function toIssueSummary(r: GroupRow) {
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

export function toIssue(r: GroupRow) {
  return { ...toIssueSummary(r), fingerprint: r.fingerprint, stack: r.stack, samples: r.samples ?? [] };
}

/** Opaque list cursor: the sort key of the last row (count desc, id asc). */
export function encodeCursor(count: number, id: string): string {
  return Buffer.from(JSON.stringify([count, id])).toString('base64url');
}

export function decodeCursor(cursor: string): { count: number; id: string } {
  try {
    const [count, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof count === 'number' && Number.isSafeInteger(count) && typeof id === 'string') return { count, id };
  } catch {
    // fall through
  }
  throw new ServiceError('invalid_request', 'cursor is not one this API returned', { fields: [{ path: 'querystring.cursor', message: 'invalid cursor' }] });
}

export async function listIssues(
  db: Queryable,
  projectId: string,
  q: { status: IssueStatus; environment?: Environment; limit: number; cursor?: string },
) {
  const params: unknown[] = [projectId, q.status, q.limit + 1];
  let where = 'project_id = $1 AND status = $2';
  if (q.environment) {
    params.push(q.environment);
    where += ` AND env_counts ? $${params.length}`;
  }
  if (q.cursor) {
    const c = decodeCursor(q.cursor);
    params.push(c.count, c.id);
    where += ` AND (count < $${params.length - 1} OR (count = $${params.length - 1} AND id > $${params.length}))`;
  }
  const r = await db.query<GroupRow>(
    `SELECT id, fingerprint, name, message, '' AS stack, culprit, status, count, env_counts, first_seen, last_seen, regression_count, suggestion, '[]'::jsonb AS samples
       FROM error_groups WHERE ${where} ORDER BY count DESC, id ASC LIMIT $3`,
    params,
  );
  const hasMore = r.rows.length > q.limit;
  const rows = r.rows.slice(0, q.limit);
  const last = rows[rows.length - 1];
  return { data: rows.map(toIssueSummary), hasMore, nextCursor: hasMore && last ? encodeCursor(Number(last.count), last.id) : null };
}

export async function getIssue(db: Queryable, projectId: string, groupId: string) {
  const r = await db.query<GroupRow>('SELECT * FROM error_groups_with_samples WHERE project_id = $1 AND id = $2', [projectId, groupId]);
  if (!r.rows[0]) throw new ServiceError('not_found', 'no such issue in this project');
  return toIssue(r.rows[0]);
}

/** Spec §3.1: which states each trigger leaves from, and where it goes. */
export const TRANSITIONS: Record<'resolve' | 'ignore' | 'reopen', { from: IssueStatus[]; to: IssueStatus }> = {
  resolve: { from: ['unresolved'], to: 'resolved' },
  ignore: { from: ['unresolved'], to: 'ignored' },
  reopen: { from: ['resolved', 'ignored'], to: 'unresolved' },
};

export async function transitionIssue(db: Queryable, projectId: string, groupId: string, action: keyof typeof TRANSITIONS) {
  const t = TRANSITIONS[action];
  const r = await db.query<GroupRow>(
    `UPDATE error_groups SET status = $3 WHERE project_id = $1 AND id = $2 AND status = ANY($4::text[]) RETURNING *`,
    [projectId, groupId, t.to, t.from],
  );
  if (r.rows[0]) return toIssue(r.rows[0]);
  const current = await db.query<{ status: IssueStatus }>('SELECT status FROM error_groups WHERE project_id = $1 AND id = $2', [projectId, groupId]);
  if (!current.rows[0]) throw new ServiceError('not_found', 'no such issue in this project');
  throw new ServiceError('invalid_transition', `cannot ${action} an issue that is ${current.rows[0].status}`, {
    body: { status: current.rows[0].status },
  });
}

async function ensureSettings(db: Queryable, projectId: string): Promise<void> {
  await db.query('INSERT INTO error_settings (project_id) VALUES ($1) ON CONFLICT (project_id) DO NOTHING', [projectId]);
}

export async function getErrorSettings(db: Queryable, projectId: string) {
  await ensureSettings(db, projectId);
  const r = await db.query<{ paused: boolean; ingest_origins: string[] }>('SELECT paused, ingest_origins FROM error_settings WHERE project_id = $1', [projectId]);
  return { paused: r.rows[0]!.paused, ingestOrigins: r.rows[0]!.ingest_origins ?? [] };
}

export async function updateErrorSettings(db: Queryable, projectId: string, patch: { paused?: boolean; ingestOrigins?: string[] }, now: number) {
  await ensureSettings(db, projectId);
  await db.query(
    `UPDATE error_settings SET paused = COALESCE($2, paused), ingest_origins = COALESCE($3::text[], ingest_origins), updated_at = $4 WHERE project_id = $1`,
    [projectId, patch.paused ?? null, patch.ingestOrigins ?? null, new Date(now).toISOString()],
  );
  return getErrorSettings(db, projectId);
}

export async function getAlertSettings(db: Queryable, projectId: string) {
  await ensureSettings(db, projectId);
  const s = await db.query<{ alerts_enabled: boolean }>('SELECT alerts_enabled FROM error_settings WHERE project_id = $1', [projectId]);
  const r = await db.query<{ email: string }>('SELECT email FROM project_alert_recipients WHERE project_id = $1 ORDER BY email', [projectId]);
  return { enabled: s.rows[0]!.alerts_enabled, recipients: r.rows.map((x) => x.email) };
}

export async function updateAlertSettings(
  db: Queryable & { transaction?: <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T> },
  projectId: string,
  patch: { enabled?: boolean; recipients?: string[] },
  now: number,
) {
  const apply = async (tx: Queryable) => {
    await ensureSettings(tx, projectId);
    if (patch.enabled !== undefined) {
      await tx.query('UPDATE error_settings SET alerts_enabled = $2, updated_at = $3 WHERE project_id = $1', [projectId, patch.enabled, new Date(now).toISOString()]);
    }
    if (patch.recipients) {
      await tx.query('DELETE FROM project_alert_recipients WHERE project_id = $1', [projectId]);
      if (patch.recipients.length) {
        await tx.query('INSERT INTO project_alert_recipients (project_id, email) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [projectId, patch.recipients]);
      }
    }
  };
  if (db.transaction) await db.transaction(apply);
  else await apply(db);
  return getAlertSettings(db, projectId);
}

/**
 * Claim the project's test-alert slot: one per `windowMs`. Returns the previous claim time (to give
 * the slot back if sending fails), or the seconds to wait.
 */
export async function claimTestAlert(db: Queryable, projectId: string, now: number, windowMs: number): Promise<{ ok: true; previous: string | null } | { ok: false; retryAfterSec: number }> {
  await ensureSettings(db, projectId);
  const before = await db.query<{ last_test_alert_at: Date | string | null }>('SELECT last_test_alert_at FROM error_settings WHERE project_id = $1', [projectId]);
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
}

export async function releaseTestAlert(db: Queryable, projectId: string, claimedAt: number, previous: string | null): Promise<void> {
  await db.query('UPDATE error_settings SET last_test_alert_at = $3 WHERE project_id = $1 AND last_test_alert_at = $2', [projectId, new Date(claimedAt).toISOString(), previous]);
}
