import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, tokenHash } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { FlagDefinition } from '../../schemas/flags.ts';
import type { Flag } from '../../schemas/api/flags.ts';

/** Feature flags in Postgres: one validated definition (schemas/flags.ts) per (project, key). */

interface Row {
  id: string;
  definition: FlagDefinition | string;
  created_at: Date | string;
  updated_at: Date | string;
}

const toFlag = (r: Row): Flag => ({
  id: r.id,
  ...(typeof r.definition === 'string' ? (JSON.parse(r.definition) as FlagDefinition) : r.definition),
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

export const flagsRepository = {
  async listFlags(db: Queryable, projectId: string): Promise<Flag[]> {
    const r = await db.query<Row>('SELECT id, definition, created_at, updated_at FROM feature_flags WHERE project_id = $1 ORDER BY key', [projectId]);
    return r.rows.map(toFlag);
  },

  async getFlag(db: Queryable, projectId: string, key: string): Promise<Flag> {
    const r = await db.query<Row>('SELECT id, definition, created_at, updated_at FROM feature_flags WHERE project_id = $1 AND key = $2', [projectId, key]);
    if (!r.rows[0]) throw new ServiceError('not_found', `no flag ${key} in this project`);
    return toFlag(r.rows[0]);
  },

  async createFlag(db: Queryable, projectId: string, def: FlagDefinition, now: number): Promise<Flag> {
    const r = await db.query<Row>(
      `INSERT INTO feature_flags (id, project_id, key, definition, created_at, updated_at) VALUES ($1, $2, $3, $4::jsonb, $5, $5)
       ON CONFLICT (project_id, key) DO NOTHING RETURNING id, definition, created_at, updated_at`,
      [newId('flg_'), projectId, def.key, JSON.stringify(def), new Date(now)],
    );
    if (!r.rows[0]) throw new ServiceError('conflict', `a flag ${def.key} exists in this project`);
    return toFlag(r.rows[0]);
  },

  async replaceFlag(db: Queryable, projectId: string, def: FlagDefinition, now: number): Promise<Flag> {
    const r = await db.query<Row>(
      `UPDATE feature_flags SET definition = $3::jsonb, updated_at = $4 WHERE project_id = $1 AND key = $2 RETURNING id, definition, created_at, updated_at`,
      [projectId, def.key, JSON.stringify(def), new Date(now)],
    );
    if (!r.rows[0]) throw new ServiceError('not_found', `no flag ${def.key} in this project`);
    return toFlag(r.rows[0]);
  },

  async deleteFlag(db: Queryable, projectId: string, key: string): Promise<void> {
    const r = await db.query('DELETE FROM feature_flags WHERE project_id = $1 AND key = $2', [projectId, key]);
    if (!r.rowCount) throw new ServiceError('not_found', `no flag ${key} in this project`);
  },

  /**
   * The project of an ingest key, by its token (the `?token=` PostHog's server SDKs send beside their secret key: the
   * "key pair" local evaluation checks); null for a token that is no live ingest key.
   */
  async ingestKeyProject(db: Queryable, token: string): Promise<string | null> {
    const { rows } = await db.query<{ project_id: string }>(
      "SELECT project_id FROM api_keys WHERE token_hash = $1 AND kind = 'ingest' AND revoked_at IS NULL",
      [tokenHash(token)],
    );
    return rows[0]?.project_id ?? null;
  },
};
