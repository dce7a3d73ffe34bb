import type { Queryable, RelationalStore } from '../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../platform/tokens.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import type { StoredVariable } from './build-variables.ts';

/**
 * What the builder reads and writes for a build's variables (build-variables.ts): the project's variables with their
 * environments, the ingest key builds get as CX_INGEST_KEY, and the framework a build detected.
 */
/** The name builds' ingest key has in the project's key list. */
export const BUILD_INGEST_KEY_NAME = 'Deploy builds (CX_INGEST_KEY)';
const HINT_CHARS = 4;

export const buildVariablesRepository = {
  async variables(db: Queryable, projectId: string): Promise<StoredVariable[]> {
    const r = await db.query<StoredVariable>(
      'SELECT name, value, secret, production, preview, branch FROM project_build_env WHERE project_id = $1 ORDER BY name, id',
      [projectId],
    );
    return r.rows;
  },

  /**
   * The project's ingest key for builds: the one kept for it while it is not revoked, else a new ingest key (listed
   * with the project's keys as BUILD_INGEST_KEY_NAME), kept for the builds after. An ingest key is write-only and
   * public by design (it ships in the site's bundle), so it is kept in clear here.
   */
  async ingestKey(db: RelationalStore, projectId: string, now: number): Promise<string> {
    return db.transaction(async (tx) => {
      // Two builds of the project at once make one key between them.
      await tx.query('SELECT id FROM projects WHERE id = $1 FOR UPDATE', [projectId]);
      const kept = await tx.query<{ token: string }>(
        `SELECT b.token FROM project_build_ingest_key b JOIN api_keys k ON k.id = b.key_id AND k.revoked_at IS NULL
          WHERE b.project_id = $1`,
        [projectId],
      );
      if (kept.rows[0]) return kept.rows[0].token;
      const prefix = TOKEN_PREFIX.ingestKey;
      const token = newToken(prefix);
      const keyId = newId('key_');
      await tx.query(`INSERT INTO api_keys (id, project_id, kind, name, hint, token_hash, created_at) VALUES ($1, $2, 'ingest', $3, $4, $5, $6)`, [
        keyId,
        projectId,
        BUILD_INGEST_KEY_NAME,
        token.slice(prefix.length, prefix.length + HINT_CHARS),
        tokenHash(token),
        new Date(now),
      ]);
      await tx.query(
        `INSERT INTO project_build_ingest_key (project_id, key_id, token) VALUES ($1, $2, $3)
         ON CONFLICT (project_id) DO UPDATE SET key_id = EXCLUDED.key_id, token = EXCLUDED.token`,
        [projectId, keyId, token],
      );
      return token;
    });
  },

  /** The framework a build detected (builder/frameworks/), shown with the deploy. */
  async recordFramework(db: Queryable, deployId: string, framework: string): Promise<void> {
    await db.query('UPDATE deploys SET framework = $2 WHERE id = $1', [deployId, framework]);
  },
};
