import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { ProjectRef } from './route-auth.ts';

/**
 * What the auth hook reads (credentials.ts, auth-plugin.ts): each credential by its token's SHA-256 (never the token),
 * its last use, and the project a `/projects/:slug` route acts on when the credential reaches it.
 */
interface TokenRow {
  id: string;
  user_id: string;
  last_used_at: Date | null;
}
export interface McpTokenRow extends TokenRow {
  resource: string;
  expires_at: Date;
}
export interface ApiKeyRow {
  id: string;
  project_id: string;
  scopes: string[];
  last_used_at: Date | null;
}

/** The tables whose rows carry a credential's last use, by credential. */
const LAST_USED_TABLE = { mcp: 'mcp_tokens', cli: 'cli_tokens', key: 'api_keys', session: 'sessions' } as const;
export type CredentialTable = keyof typeof LAST_USED_TABLE;

export const credentialsRepository = {
  async mcpToken(db: Queryable, hash: string): Promise<McpTokenRow | undefined> {
    const { rows } = await db.query<McpTokenRow>(
      'SELECT id, user_id, resource, expires_at, last_used_at FROM mcp_tokens WHERE token_hash = $1 AND revoked_at IS NULL',
      [hash],
    );
    return rows[0];
  },

  async cliToken(db: Queryable, hash: string): Promise<TokenRow | undefined> {
    const { rows } = await db.query<TokenRow>('SELECT id, user_id, last_used_at FROM cli_tokens WHERE token_hash = $1 AND revoked_at IS NULL', [hash]);
    return rows[0];
  },

  async apiKey(db: Queryable, hash: string, kind: 'live' | 'test' | 'ingest'): Promise<ApiKeyRow | undefined> {
    const { rows } = await db.query<ApiKeyRow>(
      'SELECT id, project_id, scopes, last_used_at FROM api_keys WHERE token_hash = $1 AND kind = $2 AND revoked_at IS NULL',
      [hash, kind],
    );
    return rows[0];
  },

  /** A session that is neither signed out nor expired at `now`. */
  async session(db: Queryable, hash: string, now: number): Promise<TokenRow | undefined> {
    const { rows } = await db.query<TokenRow>(
      'SELECT id, user_id, last_used_at FROM sessions WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2',
      [hash, new Date(now)],
    );
    return rows[0];
  },

  async touch(db: Queryable, table: CredentialTable, id: string, now: number): Promise<void> {
    await db.query(`UPDATE ${LAST_USED_TABLE[table]} SET last_used_at = $2 WHERE id = $1`, [id, new Date(now)]);
  },

  /** The project by slug, when it is the key's own. */
  async projectOfKey(db: Queryable, slug: string, projectId: string): Promise<ProjectRef | undefined> {
    const { rows } = await db.query<ProjectRef>('SELECT id, slug, name FROM projects WHERE slug = $1 AND id = $2', [slug, projectId]);
    return rows[0];
  },

  /** The project by slug, when the user is one of its members. */
  async projectOfMember(db: Queryable, slug: string, userId: string): Promise<ProjectRef | undefined> {
    const { rows } = await db.query<ProjectRef>(
      'SELECT p.id, p.slug, p.name FROM projects p JOIN project_members m ON m.project_id = p.id WHERE p.slug = $1 AND m.user_id = $2',
      [slug, userId],
    );
    return rows[0];
  },

  async projectById(db: Queryable, id: string): Promise<ProjectRef | undefined> {
    const { rows } = await db.query<ProjectRef>('SELECT id, slug, name FROM projects WHERE id = $1', [id]);
    return rows[0];
  },
};
