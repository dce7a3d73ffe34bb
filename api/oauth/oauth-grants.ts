import { createHash } from 'node:crypto';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';

/**
 * The MCP OAuth grants (issue 38): one authorization code starts a grant, and every token descended from it (the code's
 * exchange, then each refresh) carries the grant's id. A stolen credential used twice gives itself away:
 *   - a code exchanged a second time is refused and revokes every token issued from it (RFC 6749 §4.1.2);
 *   - a refresh token used a second time (it was rotated by its first use) is refused and revokes its whole family, the
 *     tokens the first use made included (OAuth 2.1 §4.3.1; the RFC 9700 §4.14.2 rotation), whichever party used it first.
 * The spend and the issue share one transaction, so a second use running at the same moment waits for the first to
 * commit and then finds its tokens to revoke. There is no grace period: a client that retries a refresh whose answer
 * it lost is signed out, as with GitHub's and Auth0's rotation.
 */
export const ACCESS_MS = 60 * 60_000;
export const REFRESH_MS = 30 * 24 * 60 * 60_000;
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

/** What a code's exchange or a refresh came to; `refused` carries the OAuth error's description. */
export type GrantOutcome = { kind: 'issued'; tokens: IssuedTokens } | { kind: 'reused'; revoked: number } | { kind: 'refused'; description: string };

export const newGrantId = () => newId('mcg_');

async function issueTokens(db: Queryable, t: { clientId: string; userId: string; resource: string; grantId: string }, now: number): Promise<IssuedTokens> {
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
}

/** Every token of the grant stops working (access and refresh); the count of those that were still live. */
export async function revokeGrant(db: Queryable, grantId: string, now: number): Promise<number> {
  const r = await db.query('UPDATE mcp_tokens SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL', [grantId, new Date(now)]);
  return r.rowCount ?? 0;
}

/**
 * A code's exchange (PKCE S256). The first exchange spends the code whatever comes of it; a code already spent revokes
 * the tokens issued from it.
 */
export function exchangeCode(
  db: RelationalStore,
  ask: { code: string; verifier: string; clientId: string; redirectUri: string; resource: string },
  now: number,
): Promise<GrantOutcome> {
  const hash = tokenHash(ask.code);
  return db.transaction(async (tx) => {
    const r = await tx.query<{ client_id: string; user_id: string; redirect_uri: string; code_challenge: string; expires_at: Date; grant_id: string | null }>(
      'UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL RETURNING client_id, user_id, redirect_uri, code_challenge, expires_at, grant_id',
      [hash, new Date(now)],
    );
    const c = r.rows[0];
    if (!c) {
      const spent = (await tx.query<{ grant_id: string | null }>('SELECT grant_id FROM oauth_codes WHERE code_hash = $1', [hash])).rows[0];
      if (!spent) return { kind: 'refused', description: 'the code is unknown, used or expired' };
      return { kind: 'reused', revoked: spent.grant_id ? await revokeGrant(tx, spent.grant_id, now) : 0 };
    }
    if (new Date(c.expires_at).getTime() < now) return { kind: 'refused', description: 'the code is unknown, used or expired' };
    if (c.client_id !== ask.clientId || c.redirect_uri !== ask.redirectUri)
      return { kind: 'refused', description: 'the code was issued to another client or redirect_uri' };
    if (s256(ask.verifier) !== c.code_challenge) return { kind: 'refused', description: 'code_verifier does not match the code_challenge (S256)' };
    // A code made before grants existed starts its own.
    const grantId = c.grant_id ?? newGrantId();
    return { kind: 'issued', tokens: await issueTokens(tx, { clientId: c.client_id, userId: c.user_id, resource: ask.resource, grantId }, now) };
  });
}

/**
 * A refresh (rotation): the refresh token is spent (its hash kept, `refreshed_at` set) and its access token revoked;
 * the new pair joins the same grant. A spent refresh token used again revokes the grant.
 */
export function refreshGrant(db: RelationalStore, ask: { refreshToken: string; clientId?: string; resource: string }, now: number): Promise<GrantOutcome> {
  const hash = tokenHash(ask.refreshToken);
  return db.transaction(async (tx) => {
    const r = await tx.query<{ client_id: string; user_id: string; refresh_expires_at: Date; grant_id: string }>(
      `UPDATE mcp_tokens SET refreshed_at = $2, revoked_at = $2 WHERE refresh_hash = $1 AND revoked_at IS NULL AND refreshed_at IS NULL
       RETURNING client_id, user_id, refresh_expires_at, grant_id`,
      [hash, new Date(now)],
    );
    const t = r.rows[0];
    if (!t) {
      const spent = (await tx.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE refresh_hash = $1 AND refreshed_at IS NOT NULL', [hash]))
        .rows[0];
      if (!spent) return { kind: 'refused', description: 'the refresh token is unknown, used, revoked or expired' };
      return { kind: 'reused', revoked: await revokeGrant(tx, spent.grant_id, now) };
    }
    if (new Date(t.refresh_expires_at).getTime() < now) return { kind: 'refused', description: 'the refresh token is unknown, used, revoked or expired' };
    if (ask.clientId !== undefined && ask.clientId !== t.client_id) return { kind: 'refused', description: 'the refresh token belongs to another client' };
    return { kind: 'issued', tokens: await issueTokens(tx, { clientId: t.client_id, userId: t.user_id, resource: ask.resource, grantId: t.grant_id }, now) };
  });
}

/** RFC 7009: an access or refresh token revokes its grant (every token descended from the same code). */
export async function revokeByToken(db: Queryable, token: string, now: number): Promise<void> {
  const h = tokenHash(token);
  const row = (await db.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE token_hash = $1 OR refresh_hash = $1 LIMIT 1', [h])).rows[0];
  if (row) await revokeGrant(db, row.grant_id, now);
}

/** The console's Disconnect: the token's grant, when the token is the person's own; false when it is not theirs. */
export async function revokeUsersToken(db: Queryable, userId: string, tokenId: string, now: number): Promise<boolean> {
  const row = (await db.query<{ grant_id: string }>('SELECT grant_id FROM mcp_tokens WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [tokenId, userId]))
    .rows[0];
  if (!row) return false;
  await revokeGrant(db, row.grant_id, now);
  return true;
}
