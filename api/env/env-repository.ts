import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { MASKED_VALUE, type CreateEnvVarBody, type EnvTarget, type EnvVar, type UpdateEnvVarBody } from '../../schemas/api/env.ts';

/**
 * A project's build variables per environment (issue 42; the table is 0009's `project_build_env`, given ids, targets
 * and a branch by 0042). Writes take the project's row lock, so the bounds (count, bytes) and the rule "one value of a
 * key per environment and preview branch" hold under concurrent writes. Another project's id is not found.
 */
interface EnvRow {
  id: string;
  name: string;
  value: string;
  secret: boolean;
  production: boolean;
  preview: boolean;
  branch: string;
  created_at: Date | string;
  updated_at: Date | string;
}
const COLUMNS = 'id, name, value, secret, production, preview, branch, created_at, updated_at';
const E = LIMITS.buildEnv;

const targetsOf = (r: Pick<EnvRow, 'production' | 'preview'>): EnvTarget[] => [
  ...(r.production ? ['production' as const] : []),
  ...(r.preview ? ['preview' as const] : []),
];
const toEnvVar = (r: EnvRow): EnvVar => ({
  id: r.id,
  key: r.name,
  value: r.secret ? MASKED_VALUE : r.value,
  secret: r.secret,
  target: targetsOf(r),
  branch: r.branch || null,
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

/** What a variable will be once written, checked against its project's others. */
interface Wanted {
  name: string;
  value: string;
  secret: boolean;
  production: boolean;
  preview: boolean;
  branch: string;
}

export const envRepository = {
  async list(db: Queryable, projectId: string): Promise<EnvVar[]> {
    const r = await db.query<EnvRow>(`SELECT ${COLUMNS} FROM project_build_env WHERE project_id = $1 ORDER BY name, production DESC, branch, id`, [projectId]);
    return r.rows.map(toEnvVar);
  },

  async create(db: RelationalStore, projectId: string, body: CreateEnvVarBody, now: number): Promise<EnvVar> {
    const wanted = wantedOf({ name: body.key, value: body.value, secret: body.secret, branch: body.branch ?? '' }, body.target);
    return db.transaction(async (tx) => {
      await checkFits(tx, projectId, wanted, undefined);
      const r = await tx.query<EnvRow>(
        `INSERT INTO project_build_env (id, project_id, name, value, secret, production, preview, branch, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING ${COLUMNS}`,
        [newId('env_'), projectId, wanted.name, wanted.value, wanted.secret, wanted.production, wanted.preview, wanted.branch, new Date(now)],
      );
      return toEnvVar(r.rows[0]!);
    });
  },

  async update(db: RelationalStore, projectId: string, id: string, patch: UpdateEnvVarBody, now: number): Promise<EnvVar> {
    return db.transaction(async (tx) => {
      const current = await one(tx, projectId, id);
      // A secret's value was never shown: it stays secret unless it is replaced in the same change.
      if (current.secret && patch.secret === false && patch.value === undefined)
        throw new ServiceError('invalid_request', 'a secret variable stays secret unless its value is replaced in the same change');
      const branch = patch.branch === undefined ? current.branch : (patch.branch ?? '');
      const wanted = wantedOf(
        { name: current.name, value: patch.value ?? current.value, secret: patch.secret ?? current.secret, branch },
        patch.target ?? (patch.branch ? ['preview'] : targetsOf(current)),
      );
      await checkFits(tx, projectId, wanted, id);
      const r = await tx.query<EnvRow>(
        `UPDATE project_build_env SET value = $3, secret = $4, production = $5, preview = $6, branch = $7, updated_at = $8
          WHERE id = $1 AND project_id = $2 RETURNING ${COLUMNS}`,
        [id, projectId, wanted.value, wanted.secret, wanted.production, wanted.preview, wanted.branch, new Date(now)],
      );
      return toEnvVar(r.rows[0]!);
    });
  },

  async remove(db: Queryable, projectId: string, id: string): Promise<void> {
    const r = await db.query('DELETE FROM project_build_env WHERE id = $1 AND project_id = $2', [id, projectId]);
    if (!r.rowCount) throw new ServiceError('not_found', 'no such variable');
  },
};

/** Targets and branch made one shape: a branch binds a preview override, so it takes the preview target only. */
function wantedOf(v: Omit<Wanted, 'production' | 'preview'>, target: EnvTarget[] | undefined): Wanted {
  const targets = target ?? (v.branch ? ['preview'] : ['production', 'preview']);
  if (v.branch && targets.includes('production'))
    throw new ServiceError('invalid_request', 'a branch override applies to preview builds only: its target must be ["preview"]');
  return { ...v, production: targets.includes('production'), preview: targets.includes('preview') };
}

async function one(tx: Queryable, projectId: string, id: string): Promise<EnvRow> {
  const r = await tx.query<EnvRow>(`SELECT ${COLUMNS} FROM project_build_env WHERE id = $1 AND project_id = $2 FOR UPDATE`, [id, projectId]);
  if (!r.rows[0]) throw new ServiceError('not_found', 'no such variable');
  return r.rows[0];
}

/** The bounds and the overlap rule, under the project's row lock; `except` is the variable being changed. */
async function checkFits(tx: Queryable, projectId: string, w: Wanted, except: string | undefined): Promise<void> {
  await tx.query('SELECT id FROM projects WHERE id = $1 FOR UPDATE', [projectId]);
  const others = (
    await tx.query<Pick<EnvRow, 'id' | 'name' | 'value' | 'production' | 'preview' | 'branch'>>(
      'SELECT id, name, value, production, preview, branch FROM project_build_env WHERE project_id = $1',
      [projectId],
    )
  ).rows.filter((r) => r.id !== except);
  if (others.length + 1 > E.perProject) throw new ServiceError('invalid_request', `a project has at most ${E.perProject} build variables`);
  const bytes = others.reduce((n, r) => n + Buffer.byteLength(r.name) + Buffer.byteLength(r.value), 0) + Buffer.byteLength(w.name) + Buffer.byteLength(w.value);
  if (bytes > E.totalBytes) throw new ServiceError('invalid_request', `a project's build variables take at most ${E.totalBytes} bytes together`);
  if (Buffer.byteLength(w.value) > E.valueBytes) throw new ServiceError('invalid_request', `a value takes at most ${E.valueBytes} bytes`);
  const clash = others.find((r) => r.name === w.name && r.branch === w.branch && ((r.production && w.production) || (r.preview && w.preview)));
  if (clash)
    throw new ServiceError(
      'conflict',
      `${w.name} already has a value for ${targetsOf({ production: clash.production && w.production, preview: clash.preview && w.preview }).join(' and ')}${w.branch ? ` on branch ${w.branch}` : ''} (${clash.id}): change that one`,
    );
}
