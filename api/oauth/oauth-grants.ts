import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { type IssuedTokens, newGrantId, oauthRepository } from './oauth-repository.ts';
import { codeRefusal, refreshRefusal } from './oauth-rules.ts';

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

/** What a code's exchange or a refresh came to; `refused` carries the OAuth error's description. */
export type GrantOutcome = { kind: 'issued'; tokens: IssuedTokens } | { kind: 'reused'; revoked: number } | { kind: 'refused'; description: string };

const refused = (description: string): GrantOutcome => ({ kind: 'refused', description });

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
    const code = await oauthRepository.spendCode(tx, hash, now);
    if (!code) {
      const grant = await oauthRepository.spentCodeGrant(tx, hash);
      if (grant === undefined) return refused('the code is unknown, used or expired');
      return { kind: 'reused', revoked: grant ? await oauthRepository.revokeGrant(tx, grant, now) : 0 };
    }
    const refusal = codeRefusal(code, ask, now);
    if (refusal) return refused(refusal);
    // A code made before grants existed starts its own.
    const grantId = code.grant_id ?? newGrantId();
    return {
      kind: 'issued',
      tokens: await oauthRepository.issueTokens(tx, { clientId: code.client_id, userId: code.user_id, resource: ask.resource, grantId }, now),
    };
  });
}

/**
 * A refresh (rotation): the refresh token is spent (its hash kept, `refreshed_at` set) and its access token revoked;
 * the new pair joins the same grant. A spent refresh token used again revokes the grant.
 */
export function refreshGrant(db: RelationalStore, ask: { refreshToken: string; clientId?: string; resource: string }, now: number): Promise<GrantOutcome> {
  const hash = tokenHash(ask.refreshToken);
  return db.transaction(async (tx) => {
    const token = await oauthRepository.spendRefresh(tx, hash, now);
    if (!token) {
      const grant = await oauthRepository.spentRefreshGrant(tx, hash);
      if (grant === undefined) return refused('the refresh token is unknown, used, revoked or expired');
      return { kind: 'reused', revoked: await oauthRepository.revokeGrant(tx, grant, now) };
    }
    const refusal = refreshRefusal(token, ask, now);
    if (refusal) return refused(refusal);
    const grant = { clientId: token.client_id, userId: token.user_id, resource: ask.resource, grantId: token.grant_id };
    return { kind: 'issued', tokens: await oauthRepository.issueTokens(tx, grant, now) };
  });
}

/** RFC 7009: an access or refresh token revokes its grant (every token descended from the same code). */
export async function revokeByToken(db: Queryable, token: string, now: number): Promise<void> {
  const grant = await oauthRepository.grantOfToken(db, tokenHash(token));
  if (grant) await oauthRepository.revokeGrant(db, grant, now);
}

/** The console's Disconnect: the token's grant, when the token is the person's own; false when it is not theirs. */
export async function revokeUsersToken(db: Queryable, userId: string, tokenId: string, now: number): Promise<boolean> {
  const grant = await oauthRepository.grantOfUsersToken(db, userId, tokenId);
  if (!grant) return false;
  await oauthRepository.revokeGrant(db, grant, now);
  return true;
}
