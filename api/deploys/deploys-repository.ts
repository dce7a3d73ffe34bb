import { randomBytes } from 'node:crypto';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import type { BuildSettings, BuildSettingsPatch, DeployHook, LogLine, StoredDeploy } from '../../schemas/api/deploys.ts';
import { RESERVED_ENV_PREFIXES } from '../../schemas/api/env.ts';
import { DEPLOY_COLUMNS, iso, toDeploy, type DeployRow } from '../../domain/deploys/deploy-row.ts';
import { liveDeployRepository } from '../../domain/deploys/live-deploy-repository.ts';
import type { Page } from '../../schemas/api/common.ts';
import { timeCursor } from '../time-cursor.ts';

/**
 * Deploys as the API sees them: reading, cancel and rollback, build settings, deploy hooks (§2.4, §4.4), build logs
 * (ClickHouse `deploy_logs`, written by the builder while it builds) and a deploy's shareable log link (§4.2, §5.2
 * rule 8). Queueing (§3.3's rule) is domain/deploys/queue-deploy.ts, shared with the processor's code-host pipeline (a
 * push queues a deploy). Building is the builder role's (builder/); it moves a deploy on from `queued`.
 */

interface HookRow {
  id: string;
  name: string;
  branch: string;
  hint: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
}
const toHook = (r: HookRow): DeployHook => ({
  id: r.id,
  name: r.name,
  branch: r.branch,
  hint: `${TOKEN_PREFIX.deployHook}${r.hint}…`,
  createdAt: new Date(r.created_at).toISOString(),
  lastUsedAt: iso(r.last_used_at),
});
const HINT_CHARS = 4;

/** How long a share link works when created (7 days, like a presigned link one passes around a team). */
const SHARE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const SHARE_PREFIX = 'cxlog_';

interface LogShare {
  token: string;
  expiresAt: string;
}

export const deploysRepository = {
  async get(db: Queryable, projectId: string, deployId: string): Promise<StoredDeploy> {
    const r = await db.query<DeployRow>(`SELECT ${DEPLOY_COLUMNS} FROM deploys WHERE id = $1 AND project_id = $2`, [deployId, projectId]);
    if (!r.rows[0]) throw new ServiceError('not_found', 'no such deploy');
    return toDeploy(r.rows[0]);
  },

  /** Newest first; the cursor is the last item's (created_at, id). */
  async list(db: Queryable, projectId: string, opts: { limit: number; cursor?: string }): Promise<Page<StoredDeploy>> {
    const after = opts.cursor ? timeCursor.decode(opts.cursor) : undefined;
    const r = await db.query<DeployRow>(
      `SELECT ${DEPLOY_COLUMNS} FROM deploys WHERE project_id = $1
         AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::text))
       ORDER BY created_at DESC, id DESC LIMIT $4`,
      [projectId, after?.at ?? null, after?.id ?? '', opts.limit + 1],
    );
    return timeCursor.page(r.rows, opts.limit, toDeploy, (d) => ({ at: d.created_at, id: d.id }));
  },

  /**
   * Cancel a deploy: a queued one ends `canceled` now; a building one is marked, and its builder kills the build
   * at its next lease renewal. A finished deploy cannot be canceled (409).
   */
  async cancel(db: Queryable, projectId: string, deployId: string, now: number): Promise<StoredDeploy> {
    const queued = await db.query(`UPDATE deploys SET status = 'canceled', finished_at = $3 WHERE id = $1 AND project_id = $2 AND status = 'queued'`, [
      deployId,
      projectId,
      new Date(now),
    ]);
    const building = queued.rowCount
      ? queued
      : await db.query(`UPDATE deploys SET cancel_requested = true WHERE id = $1 AND project_id = $2 AND status = 'building'`, [deployId, projectId]);
    const d = await deploysRepository.get(db, projectId, deployId);
    if (!building.rowCount) throw new ServiceError('conflict', `the deploy is already ${d.status}`);
    return d;
  },

  /** Make a ready production deploy the live one again (no rebuild): its output serves the production hosts. */
  async rollbackTo(db: Queryable, projectId: string, deployId: string): Promise<StoredDeploy> {
    const d = await deploysRepository.get(db, projectId, deployId);
    if (d.environment !== 'production' || d.status !== 'ready') throw new ServiceError('conflict', 'only a ready production deploy can be rolled back to');
    // Its output must still be kept (builder/artifact-sweep.ts keeps the live one and the newest few).
    if (!(await liveDeployRepository.makeLive(db, projectId, deployId)))
      throw new ServiceError(
        'conflict',
        'the output of this deploy was cleaned up (only the live deploy and the newest ARTIFACTS_KEPT are kept, within the project and account quotas): deploy its commit again',
      );
    return d;
  },

  /** The live production deploy and the newest previews, for the project rollup. */
  async rollup(db: Queryable, projectId: string): Promise<{ live: StoredDeploy | null; previews: StoredDeploy[] }> {
    const [live, previews] = await Promise.all([
      db.query<DeployRow>(
        `SELECT ${DEPLOY_COLUMNS.split(', ')
          .map((c) => `d.${c}`)
          .join(', ')} FROM deploys d JOIN projects p ON p.live_deploy_id = d.id WHERE p.id = $1`,
        [projectId],
      ),
      db.query<DeployRow>(`SELECT ${DEPLOY_COLUMNS} FROM deploys WHERE project_id = $1 AND environment = 'preview' ORDER BY created_at DESC, id DESC LIMIT 5`, [
        projectId,
      ]),
    ]);
    return { live: live.rows[0] ? toDeploy(live.rows[0]) : null, previews: previews.rows.map(toDeploy) };
  },

  // ---- build settings -----------------------------------------------------------------------------

  async buildSettings(db: Queryable, projectId: string): Promise<BuildSettings> {
    const [p, s, env] = await Promise.all([
      db.query<{ default_branch: string }>('SELECT default_branch FROM projects WHERE id = $1', [projectId]),
      db.query<{ repo_url: string; build_command: string; output_dir: string; spa: boolean }>(
        'SELECT repo_url, build_command, output_dir, spa FROM project_build_settings WHERE project_id = $1',
        [projectId],
      ),
      db.query<{ name: string; value: string; secret: boolean }>('SELECT name, value, secret FROM project_build_env WHERE project_id = $1 ORDER BY name', [
        projectId,
      ]),
    ]);
    const settings = s.rows[0];
    return {
      repoUrl: settings?.repo_url ?? null,
      defaultBranch: p.rows[0]?.default_branch ?? 'main',
      buildCommand: settings?.build_command ?? '',
      outputDir: settings?.output_dir ?? '.',
      spa: settings?.spa ?? false,
      // A secret's value is write-only: a hint of its length and last characters, never the value.
      env: env.rows.map((e) => ({
        name: e.name,
        secret: e.secret,
        value: e.secret ? null : e.value,
        hint: e.secret ? `…${e.value.slice(-2)} (${e.value.length} chars)` : null,
      })),
    };
  },

  async updateBuildSettings(db: RelationalStore, projectId: string, patch: BuildSettingsPatch, now: number): Promise<void> {
    await db.transaction(async (tx) => {
      if (patch.defaultBranch !== undefined) await tx.query('UPDATE projects SET default_branch = $2 WHERE id = $1', [projectId, patch.defaultBranch]);
      if (patch.repoUrl !== undefined || patch.buildCommand !== undefined || patch.outputDir !== undefined || patch.spa !== undefined) {
        const current = await tx.query<{ repo_url: string }>('SELECT repo_url FROM project_build_settings WHERE project_id = $1', [projectId]);
        if (!current.rows[0] && patch.repoUrl === undefined) throw new ServiceError('invalid_request', 'set repoUrl first: a project builds from a repository');
        await tx.query(
          `INSERT INTO project_build_settings (project_id, repo_url, build_command, output_dir, updated_at, spa) VALUES ($1, $2, COALESCE($3, ''), COALESCE($4, '.'), $5, COALESCE($6, false))
           ON CONFLICT (project_id) DO UPDATE SET repo_url = COALESCE($2, project_build_settings.repo_url),
             build_command = COALESCE($3, project_build_settings.build_command), output_dir = COALESCE($4, project_build_settings.output_dir), updated_at = $5,
             spa = COALESCE($6, project_build_settings.spa)`,
          [projectId, patch.repoUrl ?? current.rows[0]?.repo_url, patch.buildCommand ?? null, patch.outputDir ?? null, new Date(now), patch.spa ?? null],
        );
      }
      for (const [name, v] of Object.entries(patch.env ?? {})) {
        if (RESERVED_ENV_PREFIXES.some((p) => name.startsWith(p))) throw new ServiceError('invalid_request', `${name}: keys starting with CX_ are reserved`);
        // Set here, a variable is one value for every environment and branch (per environment: /v1/projects/:slug/env).
        await tx.query('DELETE FROM project_build_env WHERE project_id = $1 AND name = $2', [projectId, name]);
        if (v !== null)
          await tx.query('INSERT INTO project_build_env (id, project_id, name, value, secret) VALUES ($1, $2, $3, $4, $5)', [
            newId('env_'),
            projectId,
            name,
            v.value,
            v.secret ?? false,
          ]);
      }
    });
  },

  /** A project without a build source builds from `repoUrl` (a repository just connected); one with a source keeps it. */
  async sourceIfUnset(db: Queryable, projectId: string, repoUrl: string, now: number): Promise<void> {
    await db.query('INSERT INTO project_build_settings (project_id, repo_url, updated_at) VALUES ($1, $2, $3) ON CONFLICT (project_id) DO NOTHING', [
      projectId,
      repoUrl,
      new Date(now),
    ]);
  },

  // ---- deploy hooks (§2.4, §4.4) --------------------------------------------------------------------

  async createHook(db: Queryable, projectId: string, name: string, branch: string, now: number): Promise<DeployHook & { token: string }> {
    const token = newToken(TOKEN_PREFIX.deployHook);
    const r = await db.query<HookRow>(
      'INSERT INTO deploy_hooks (id, project_id, name, branch, token_hash, hint, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, name, branch, hint, created_at, last_used_at',
      [
        newId('dhk_'),
        projectId,
        name,
        branch,
        tokenHash(token),
        token.slice(TOKEN_PREFIX.deployHook.length, TOKEN_PREFIX.deployHook.length + HINT_CHARS),
        new Date(now),
      ],
    );
    return { ...toHook(r.rows[0]!), token };
  },

  async listHooks(db: Queryable, projectId: string): Promise<DeployHook[]> {
    const r = await db.query<HookRow>(
      'SELECT id, name, branch, hint, created_at, last_used_at FROM deploy_hooks WHERE project_id = $1 AND deleted_at IS NULL ORDER BY created_at, id',
      [projectId],
    );
    return r.rows.map(toHook);
  },

  async deleteHook(db: Queryable, projectId: string, id: string, now: number): Promise<void> {
    const r = await db.query('UPDATE deploy_hooks SET deleted_at = $3 WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL', [
      id,
      projectId,
      new Date(now),
    ]);
    if (r.rowCount === 0) throw new ServiceError('not_found', 'no such deploy hook');
  },

  /** The live hook a raw token belongs to, marking it used; undefined for an unknown or deleted token. */
  async hookByToken(db: Queryable, token: string, now: number): Promise<{ id: string; projectId: string; branch: string } | undefined> {
    const r = await db.query<{ id: string; project_id: string; branch: string }>(
      'UPDATE deploy_hooks SET last_used_at = $2 WHERE token_hash = $1 AND deleted_at IS NULL RETURNING id, project_id, branch',
      [tokenHash(token), new Date(now)],
    );
    const h = r.rows[0];
    return h && { id: h.id, projectId: h.project_id, branch: h.branch };
  },

  // ---- build logs and their share links (§4.2, §5.2 rule 8) -----------------------------------------

  /** Lines from `fromSeq` on, in order (at most `limit`). */
  async logLines(analytics: AnalyticalStore, projectId: string, deployId: string, fromSeq: number, limit: number): Promise<LogLine[]> {
    const rows = await analytics.query<{ seq: number | string; at: string; stream: string; line: string }>(
      `SELECT seq, toString(at) AS at, stream, line FROM deploy_logs FINAL
        WHERE project_id = {p:String} AND deploy_id = {d:String} AND seq >= {from:UInt32}
        ORDER BY seq LIMIT {limit:UInt32}`,
      { p: projectId, d: deployId, from: fromSeq, limit },
    );
    return rows.map((r) => ({ seq: Number(r.seq), at: `${r.at.replace(' ', 'T')}Z`, stream: r.stream, line: r.line }));
  },

  /** The deploy's live share token, made (or remade, once expired) on first ask. */
  async share(db: Queryable, projectId: string, deployId: string, now: number): Promise<LogShare> {
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
  },

  async revokeShare(db: Queryable, projectId: string, deployId: string): Promise<void> {
    const r = await db.query('UPDATE deploys SET share_token = NULL, share_expires_at = NULL WHERE id = $1 AND project_id = $2', [deployId, projectId]);
    if (r.rowCount === 0) throw new ServiceError('not_found', 'no such deploy');
  },

  /** The deploy a share link opens, or undefined: a wrong, revoked or expired token reads like no deploy at all. */
  async byShare(db: Queryable, slug: string, deployId: string, token: string, now: number): Promise<{ projectId: string; status: string } | undefined> {
    if (!token.startsWith(SHARE_PREFIX)) return undefined;
    const r = await db.query<{ project_id: string; status: string }>(
      `SELECT d.project_id, d.status FROM deploys d JOIN projects p ON p.id = d.project_id
        WHERE d.id = $1 AND p.slug = $2 AND d.share_token = $3 AND d.share_expires_at > $4`,
      [deployId, slug, token, new Date(now)],
    );
    const d = r.rows[0];
    return d && { projectId: d.project_id, status: d.status };
  },
};
