import { randomBytes } from 'node:crypto';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { FINISHED_DEPLOY_STATES, type DeployState } from '../../schemas/deploys.ts';
import type { LogLine, LogPage } from '../../schemas/api/deploys.ts';

/**
 * Reading build logs (ClickHouse `deploy_logs`, written by the builder while it builds) and the shareable
 * log link of a deploy (§4.2 `GET /v1/deploy-logs/:slug/:deployId?token=`, §5.2 rule 8).
 */
/** Lines from `fromSeq` on, in order (at most `limit`). */
export async function readLogLines(analytics: AnalyticalStore, projectId: string, deployId: string, fromSeq: number, limit: number): Promise<LogLine[]> {
  const rows = await analytics.query<{ seq: number | string; at: string; stream: string; line: string }>(
    `SELECT seq, toString(at) AS at, stream, line FROM deploy_logs FINAL
      WHERE project_id = {p:String} AND deploy_id = {d:String} AND seq >= {from:UInt32}
      ORDER BY seq LIMIT {limit:UInt32}`,
    { p: projectId, d: deployId, from: fromSeq, limit },
  );
  return rows.map((r) => ({ seq: Number(r.seq), at: `${r.at.replace(' ', 'T')}Z`, stream: r.stream, line: r.line }));
}

export const LOG_PAGE = 1000;

/** One page of a deploy's log from `from` on: the lines, where the next page starts, and whether there is no more to come. */
export async function logPage(analytics: AnalyticalStore, projectId: string, deployId: string, status: string, from: number): Promise<LogPage> {
  const lines = await readLogLines(analytics, projectId, deployId, from, LOG_PAGE);
  const nextSeq = lines.length ? lines[lines.length - 1]!.seq + 1 : from;
  return { status, lines, nextSeq, done: FINISHED_DEPLOY_STATES.includes(status as DeployState) && lines.length < LOG_PAGE };
}

/** How long a share link works when created (7 days, like a presigned link one passes around a team). */
export const SHARE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const SHARE_PREFIX = 'cxlog_';

export interface LogShare {
  token: string;
  expiresAt: string;
}

/** The deploy's live share token, made (or remade, once expired) on first ask. */
export async function shareOf(db: Queryable, projectId: string, deployId: string, now: number): Promise<LogShare> {
  const current = await db.query<{ share_token: string | null; share_expires_at: Date | string | null }>(
    'SELECT share_token, share_expires_at FROM deploys WHERE id = $1 AND project_id = $2',
    [deployId, projectId],
  );
  const row = current.rows[0];
  if (!row) throw new ServiceError('not_found', 'no such deploy');
  if (row.share_token && row.share_expires_at && new Date(row.share_expires_at).getTime() > now)
    return { token: row.share_token, expiresAt: new Date(row.share_expires_at).toISOString() };
  const token = SHARE_PREFIX + randomBytes(24).toString('base64url');
  const expires = new Date(now + SHARE_TTL_MS);
  await db.query('UPDATE deploys SET share_token = $3, share_expires_at = $4 WHERE id = $1 AND project_id = $2', [deployId, projectId, token, expires]);
  return { token, expiresAt: expires.toISOString() };
}

export async function revokeShare(db: Queryable, projectId: string, deployId: string): Promise<void> {
  const r = await db.query('UPDATE deploys SET share_token = NULL, share_expires_at = NULL WHERE id = $1 AND project_id = $2', [deployId, projectId]);
  if (r.rowCount === 0) throw new ServiceError('not_found', 'no such deploy');
}

/** The deploy a share link opens, or undefined: a wrong, revoked or expired token reads like no deploy at all. */
export async function deployByShare(
  db: Queryable,
  slug: string,
  deployId: string,
  token: string,
  now: number,
): Promise<{ projectId: string; status: string } | undefined> {
  if (!token.startsWith(SHARE_PREFIX)) return undefined;
  const r = await db.query<{ project_id: string; status: string }>(
    `SELECT d.project_id, d.status FROM deploys d JOIN projects p ON p.id = d.project_id
      WHERE d.id = $1 AND p.slug = $2 AND d.share_token = $3 AND d.share_expires_at > $4`,
    [deployId, slug, token, new Date(now)],
  );
  const d = r.rows[0];
  return d && { projectId: d.project_id, status: d.status };
}
