import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { randomBytes } from 'node:crypto';
import { type PatchProjectBody, type Project } from '../../schemas/api/projects.ts';
import { guardedRolloutOf } from '../../schemas/guarded-rollout.ts';

/**
 * Projects, their members and environment hosts. The creator becomes the owner member. The environment hosts keep
 * their columns' first name (production_domains, preview_domains): the API says environmentHosts, the mapping is here.
 */
interface ProjectRow {
  id: string;
  slug: string;
  name: string;
  default_branch: string;
  production_domains: string[];
  preview_domains: string[];
  serve_source_maps: boolean;
  guarded_rollout: unknown;
  preview_protection: boolean;
  preview_password_hash: string | null;
  created_at: Date | string;
}

const COLUMNS =
  'id, slug, name, default_branch, production_domains, preview_domains, serve_source_maps, guarded_rollout, preview_protection, preview_password_hash, created_at';
export const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  defaultBranch: r.default_branch,
  environmentHosts: { production: r.production_domains ?? [], preview: r.preview_domains ?? [] },
  serveSourceMaps: r.serve_source_maps === true,
  guardedRollout: guardedRolloutOf(typeof r.guarded_rollout === 'string' ? JSON.parse(r.guarded_rollout) : r.guarded_rollout),
  // The hash is read, never shown: only whether there is one.
  previewProtection: { enabled: r.preview_protection === true, passwordSet: !!r.preview_password_hash },
  createdAt: new Date(r.created_at).toISOString(),
});

/** The random key that signs a project's preview cookies (hosting/serve/preview-gate.ts). */
const previewKey = () => randomBytes(32).toString('base64url');

/** A slug from a name: lowercase a-z0-9 and hyphens, 3 to 40 characters. */
function slugFromName(name: string): string {
  let s = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 34)
    .replace(/-+$/, '');
  if (s.length < 3) s = s ? `${s}-project` : 'project';
  return s;
}

export interface CreateProjectInput {
  ownerId: string;
  name: string;
  slug?: string;
  defaultBranch?: string;
  environmentHosts?: { production?: string[]; preview?: string[] };
}

export const projectsRepository = {
  /** A new project; without a slug one is made from the name (with a random suffix when taken). 409 slug_taken. */
  async createProject(db: RelationalStore, input: CreateProjectInput): Promise<Project> {
    const explicit = input.slug !== undefined;
    const base = input.slug ?? slugFromName(input.name);
    for (let attempt = 0; attempt < 5; attempt++) {
      const slug = explicit || attempt === 0 ? base : `${base}-${randomBytes(3).toString('hex')}`;
      const project = await db.transaction((tx) => this.insertProject(tx, input, slug));
      if (project) return project;
      if (explicit) break;
    }
    throw new ServiceError('slug_taken', `the slug ${base} is taken`);
  },

  /**
   * Insert a project with its owner membership and default error settings, inside the caller's
   * transaction; null when the slug is taken.
   */
  async insertProject(tx: Queryable, input: CreateProjectInput, slug: string): Promise<Project | null> {
    const hosts = input.environmentHosts;
    const { rows } = await tx.query<ProjectRow>(
      // A new project's previews are protected (issue 42); projects from before 0044 keep theirs public.
      `INSERT INTO projects (id, slug, name, owner_id, default_branch, production_domains, preview_domains, preview_protection, preview_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8) ON CONFLICT (slug) DO NOTHING RETURNING ${COLUMNS}`,
      [newId('prj_'), slug, input.name, input.ownerId, input.defaultBranch ?? 'main', hosts?.production ?? [], hosts?.preview ?? [], previewKey()],
    );
    const row = rows[0];
    if (!row) return null;
    await tx.query("INSERT INTO project_members (project_id, user_id, role) VALUES ($1, $2, 'owner')", [row.id, input.ownerId]);
    await tx.query('INSERT INTO error_settings (project_id) VALUES ($1) ON CONFLICT DO NOTHING', [row.id]);
    return toProject(row);
  },

  async listProjectsOfUser(db: Queryable, userId: string): Promise<Project[]> {
    const { rows } = await db.query<ProjectRow>(
      `SELECT ${COLUMNS.split(', ')
        .map((c) => `p.${c}`)
        .join(', ')} FROM projects p JOIN project_members m ON m.project_id = p.id WHERE m.user_id = $1 ORDER BY p.created_at, p.slug`,
      [userId],
    );
    return rows.map(toProject);
  },

  async getProject(db: Queryable, id: string): Promise<Project | null> {
    const { rows } = await db.query<ProjectRow>(`SELECT ${COLUMNS} FROM projects WHERE id = $1`, [id]);
    return rows[0] ? toProject(rows[0]) : null;
  },

  /**
   * `previewPasswordHash`: the new password's hash (the route hashes `patch.previewProtection.password`), null to
   * remove it, undefined to keep it. A change bumps the version, so cookies from before stop opening the previews.
   */
  async updateProject(db: Queryable, id: string, patch: PatchProjectBody, previewPasswordHash?: string | null): Promise<Project> {
    const hosts = patch.environmentHosts;
    const { rows } = await db.query<ProjectRow>(
      `UPDATE projects SET name = COALESCE($2, name), default_branch = COALESCE($3, default_branch),
         production_domains = COALESCE($4, production_domains), preview_domains = COALESCE($5, preview_domains),
         serve_source_maps = COALESCE($6, serve_source_maps),
         -- guarded rollout: the fields given over the stored ones, thresholds merged one level down
         guarded_rollout = CASE WHEN $7::jsonb IS NULL THEN guarded_rollout
           ELSE guarded_rollout || ($7::jsonb - 'thresholds') || CASE WHEN $7::jsonb ? 'thresholds'
             THEN jsonb_build_object('thresholds', COALESCE(guarded_rollout->'thresholds', '{}'::jsonb) || ($7::jsonb->'thresholds')) ELSE '{}'::jsonb END END,
         preview_protection = COALESCE($8, preview_protection),
         preview_key = COALESCE(preview_key, $9),
         preview_password_hash = CASE WHEN $10 THEN $11 ELSE preview_password_hash END,
         preview_password_version = preview_password_version + CASE WHEN $10 THEN 1 ELSE 0 END
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        patch.name ?? null,
        patch.defaultBranch ?? null,
        hosts?.production ?? null,
        hosts?.preview ?? null,
        patch.serveSourceMaps ?? null,
        patch.guardedRollout ? JSON.stringify(patch.guardedRollout) : null,
        patch.previewProtection?.enabled ?? null,
        previewKey(),
        previewPasswordHash !== undefined,
        previewPasswordHash ?? null,
      ],
    );
    if (!rows[0]) throw new ServiceError('not_found', 'project not found');
    return toProject(rows[0]);
  },

  /** The dashboard rollup's counts: active keys by kind, open error issues per environment. */
  async projectCounts(db: Queryable, projectId: string) {
    const keys = await db.query<{ kind: string; n: number }>(
      'SELECT kind, count(*)::int AS n FROM api_keys WHERE project_id = $1 AND revoked_at IS NULL GROUP BY kind',
      [projectId],
    );
    const keyCounts = { live: 0, test: 0, ingest: 0 } as Record<'live' | 'test' | 'ingest', number>;
    for (const r of keys.rows) if (r.kind in keyCounts) keyCounts[r.kind as keyof typeof keyCounts] = Number(r.n);

    const groups = await db.query<{ env_counts: Record<string, number> | string; status: string }>(
      "SELECT env_counts, status FROM error_groups WHERE project_id = $1 AND status = 'unresolved'",
      [projectId],
    );
    const byEnvironment: Record<string, number> = {};
    for (const g of groups.rows) {
      const counts = typeof g.env_counts === 'string' ? (JSON.parse(g.env_counts) as Record<string, number>) : (g.env_counts ?? {});
      for (const [env, n] of Object.entries(counts)) if (Number(n) > 0) byEnvironment[env] = (byEnvironment[env] ?? 0) + 1;
    }
    return { keys: keyCounts, openErrors: { total: groups.rows.length, byEnvironment } };
  },
};
