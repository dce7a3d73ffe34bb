import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX, type Scope } from '../../schemas/scopes.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { ApiKey, KeyKind } from '../../schemas/api/keys.ts';

/**
 * Project API keys (`cx_live_`, `cx_test_`, with scopes) and ingest keys (`cak_live_`, write-only,
 * no scopes). The token exists in clear only in the create response; the table keeps its
 * SHA-256 and a short hint (the first characters after the prefix) to tell keys apart.
 */
const KEY_PREFIX: Record<KeyKind, string> = { live: TOKEN_PREFIX.liveKey, test: TOKEN_PREFIX.testKey, ingest: TOKEN_PREFIX.ingestKey };
const HINT_CHARS = 4;

interface KeyRow {
  id: string;
  kind: KeyKind;
  name: string;
  hint: string;
  scopes: string[];
  created_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}
const COLUMNS = 'id, kind, name, hint, scopes, created_at, last_used_at, revoked_at';
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const toKey = (r: KeyRow): ApiKey => ({
  id: r.id,
  kind: r.kind,
  name: r.name,
  hint: `${KEY_PREFIX[r.kind]}${r.hint}…`,
  scopes: r.scopes as Scope[],
  createdAt: new Date(r.created_at).toISOString(),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
  revoked: r.revoked_at !== null,
});

export const keysRepository = {
  async createKey(
    db: Queryable,
    input: { projectId: string; kind: KeyKind; name?: string; scopes?: Scope[]; createdBy?: string | null; now: number },
  ): Promise<ApiKey & { token: string }> {
    const prefix = KEY_PREFIX[input.kind];
    const token = newToken(prefix);
    const { rows } = await db.query<KeyRow>(
      `INSERT INTO api_keys (id, project_id, kind, name, hint, token_hash, scopes, created_by, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
      [
        newId('key_'),
        input.projectId,
        input.kind,
        input.name ?? '',
        token.slice(prefix.length, prefix.length + HINT_CHARS),
        tokenHash(token),
        input.kind === 'ingest' ? [] : (input.scopes ?? []),
        input.createdBy ?? null,
        new Date(input.now),
      ],
    );
    return { ...toKey(rows[0]), token };
  },

  async listKeys(db: Queryable, projectId: string): Promise<ApiKey[]> {
    const { rows } = await db.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE project_id = $1 ORDER BY created_at DESC, id`, [projectId]);
    return rows.map(toKey);
  },

  /** Revoke a key of the project; revoking twice is harmless and returns the same key. */
  async revokeKey(db: Queryable, projectId: string, id: string, now: number): Promise<ApiKey> {
    const { rows } = await db.query<KeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND project_id = $2 RETURNING ${COLUMNS}`,
      [id, projectId, new Date(now)],
    );
    if (!rows[0]) throw new ServiceError('not_found', 'no such key in this project');
    return toKey(rows[0]);
  },

  /** The project's number: the project id of its keys' Sentry DSNs (platform/sentry-dsn.ts). */
  async projectNumber(db: Queryable, projectId: string): Promise<string> {
    const { rows } = await db.query<{ number: string | number }>('SELECT number FROM projects WHERE id = $1', [projectId]);
    if (!rows[0]) throw new ServiceError('not_found', 'no such project');
    return String(rows[0].number);
  },
};
