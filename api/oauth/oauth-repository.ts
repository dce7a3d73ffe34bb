import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import type { McpTokenList } from '../../schemas/api/oauth.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { ACCESS_MS, CODE_MS, type OAuthClient, REFRESH_MS } from './oauth-rules.ts';

/**
 * The MCP OAuth's tables (migrations of issues 27 and 38): oauth_clients (registered and metadata-document clients),
 * oauth_codes (one-use, kept as a hash) and mcp_tokens (access and refresh pairs, as hashes, each with its grant).
 */
export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

/** A code as its exchange reads it. */
export interface CodeRow {
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: Date;
  grant_id: string | null;
}

/** A refresh token as its use reads it. */
export interface RefreshRow {
  client_id: string;
  user_id: string;
  refresh_expires_at: Date;
  grant_id: string;
}

export const newGrantId = () => newId('mcg_');

export const oauthRepository = {
  async client(db: Queryable, id: string): Promise<OAuthClient | undefined> {
    const r = await db.query<{ id: string; name: string; redirect_uris: string[] }>('SELECT id, name, redirect_uris FROM oauth_clients WHERE id = $1', [id]);
    const c = r.rows[0];
    return c && { id: c.id, name: c.name, redirectUris: c.redirect_uris };
  },

  /** A dynamically registered client (RFC 7591), under a new id. */
  async register(db: Queryable, c: { name: string; redirectUris: string[] }, now: number): Promise<OAuthClient> {
    const id = newId('oac_');
    await db.query('INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)', [id, c.name, c.redirectUris, new Date(now)]);
    return { id, ...c };
  },

  /** A metadata document's client, as last read, remembered for the token endpoint. */
  async rememberDocumentClient(db: Queryable, c: OAuthClient, now: number): Promise<void> {
    await db.query(
      `INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris`,
      [c.id, c.name, c.redirectUris, new Date(now)],
    );
  },

  /** A new one-use code (kept as its hash, CODE_MS long), starting a grant; the code itself is answered once. */
  async createCode(
    db: Queryable,
    c: { clientId: string; userId: string; redirectUri: string; codeChallenge: string; resource: string },
    now: number,
  ): Promise<string> {
    const code = newToken(TOKEN_PREFIX.oauthCode);
    await db.query(
      `INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, resource, expires_at, grant_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [tokenHash(code), c.clientId, c.userId, c.redirectUri, c.codeChallenge, c.resource, new Date(now + CODE_MS), newGrantId()],
    );
    return code;
  },

  /** Spend a code not spent before: its row, or undefined when it is unknown or spent already. */
  async spendCode(db: Queryable, codeHash: string, now: number): Promise<CodeRow | undefined> {
    const r = await db.query<CodeRow>(
      'UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL RETURNING client_id, user_id, redirect_uri, code_challenge, expires_at, grant_id',
      [codeHash, new Date(now)],
    );
    return r.rows[0];
  },

  /** A spent code's grant: undefined for an unknown code, null for one made before grants existed. */
  async spentCodeGrant(db: Queryable, codeHash: string): Promise<string | null | undefined> {
    return (await db.query<{ grant_id: string | null }>('SELECT grant_id FROM oauth_codes WHERE code_hash = $1', [codeHash])).rows[0]?.grant_id;
  },

  /** A new access and refresh pair of the grant. */
  async issueTokens(db: Queryable, t: { clientId: string; userId: string; resource: string; grantId: string }, now: number): Promise<IssuedTokens> {
    const access = newToken(TOKEN_PREFIX.mcpToken);
    const refresh = newToken(TOKEN_PREFIX.mcpRefresh);
    await db.query(
      `INSERT INTO mcp_tokens (id, client_id, user_id, resource, token_hash, refresh_hash, expires_at, refresh_expires_at, created_at, grant_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        newId('mct_'),
        t.clientId,
        t.userId,
        t.resource,
        tokenHash(access),
        tokenHash(refresh),
        new Date(now + ACCESS_MS),
        new Date(now + REFRESH_MS),
        new Date(now),
        t.grantId,
      ],
    );
    return { access_token: access, token_type: 'Bearer', expires_in: ACCESS_MS / 1000, refresh_token: refresh };
  },

  /** Spend a live refresh token (rotation): it and its access token stop working; its row, or undefined. */
  async spendRefresh(db: Queryable, refreshHash: string, now: number): Promise<RefreshRow | undefined> {
    const r = await db.query<RefreshRow>(
      `UPDATE mcp_tokens SET refreshed_at = $2, revoked_at = $2 WHERE refresh_hash = $1 AND revoked_at IS NULL AND refreshed_at IS NULL
       RETURNING client_id, user_id, refresh_expires_at, grant_id`,
      [refreshHash, new Date(now)],
    );
    return r.rows[0];
  },

  /** The grant of a refresh token spent by an earlier refresh, or undefined. */
  async spentRefreshGrant(db: Queryable, refreshHash: string): Promise<string | undefined> {
    return (await db.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE refresh_hash = $1 AND refreshed_at IS NOT NULL', [refreshHash])).rows[0]
      ?.grant_id;
  },

  /** The grant of an access or refresh token, or undefined. */
  async grantOfToken(db: Queryable, hash: string): Promise<string | undefined> {
    return (await db.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE token_hash = $1 OR refresh_hash = $1 LIMIT 1', [hash])).rows[0]
      ?.grant_id;
  },

  /** The grant of one of the person's live tokens, or undefined when it is not theirs (or not live). */
  async grantOfUsersToken(db: Queryable, userId: string, tokenId: string): Promise<string | undefined> {
    return (await db.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [tokenId, userId]))
      .rows[0]?.grant_id;
  },

  /** Every token of the grant stops working (access and refresh); the count of those that were still live. */
  async revokeGrant(db: Queryable, grantId: string, now: number): Promise<number> {
    const r = await db.query('UPDATE mcp_tokens SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL', [grantId, new Date(now)]);
    return r.rowCount ?? 0;
  },

  /** The person's live MCP tokens, newest first, each with its client's name. */
  async userTokens(db: Queryable, userId: string): Promise<McpTokenList['tokens']> {
    const r = await db.query<{ id: string; name: string; created_at: Date; expires_at: Date; last_used_at: Date | null }>(
      `SELECT t.id, c.name, t.created_at, t.refresh_expires_at AS expires_at, t.last_used_at FROM mcp_tokens t JOIN oauth_clients c ON c.id = t.client_id
       WHERE t.user_id = $1 AND t.revoked_at IS NULL ORDER BY t.created_at DESC LIMIT 100`,
      [userId],
    );
    return r.rows.map((x) => ({
      id: x.id,
      client: x.name,
      createdAt: new Date(x.created_at).toISOString(),
      expiresAt: new Date(x.expires_at).toISOString(),
      lastUsedAt: x.last_used_at ? new Date(x.last_used_at).toISOString() : null,
    }));
  },
};
