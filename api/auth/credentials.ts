import type { FastifyRequest } from 'fastify';
import { ServiceError } from '../../schemas/error-codes.ts';
import { SCOPES, TOKEN_PREFIX, type Scope } from '../../schemas/scopes.ts';
import type { Platform } from '../../platform/platform.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { isDiskFullError } from '../../platform/data-dir/disk-space.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import { EDGE_PATHS, ROUTES } from '../../schemas/api/route-table.ts';
import { INTERNAL_CALL_HEADER, INTERNAL_CALL_SECRET } from './internal-calls.ts';
import { credentialsRepository } from './credentials-repository.ts';
import type { Credential } from './route-auth.ts';

/**
 * Turns what a request carries (session cookie, or `Authorization: Bearer <token>`) into a
 * Credential, or refuses it. Tokens are looked up by their SHA-256 only. Last-used times are
 * written at most once a minute per credential, so reads do not turn into a write per request.
 */
export const SESSION_COOKIE = 'cx_session';
const LAST_USED_THROTTLE_MS = 60_000;
/** newToken(): prefix + 32 random bytes in base64url (43 characters). */
const TOKEN_BODY = /^[A-Za-z0-9_-]{43}$/;

export type Carrier = 'cookie' | 'bearer';
export interface ResolvedCredential {
  credential: Credential;
  carrier: Carrier;
}

export const INGEST_KEY_REFUSED = `ingest keys (cak_live_) are write-only and work only on the ingest routes (${EDGE_PATHS.errors}, ${EDGE_PATHS.analytics}, ${EDGE_PATHS.flags})`;
/** The MCP endpoint: its tokens' one resource. */
const MCP_PATH = ROUTES.mcpPost.path;

function wellFormed(token: string, prefix: string): boolean {
  return token.startsWith(prefix) && TOKEN_BODY.test(token.slice(prefix.length));
}

function stale(lastUsed: Date | string | null, now: number): boolean {
  return !lastUsed || now - new Date(lastUsed).getTime() >= LAST_USED_THROTTLE_MS;
}

const unauthorized = (message: string) => new ServiceError('unauthorized', message);

/** A credential's last use is a note, not what the request is for: a store out of disk space does not fail a read. */
const unlessDiskFull = (err: unknown) => {
  if (!isDiskFullError(err)) throw err;
};

/** Resolve the caller's credential; null when the request carries none. Throws 401/403 ServiceErrors. */
export async function resolveCredential(
  platform: Pick<Platform, 'clock' | 'db'> & Partial<Pick<Platform, 'config'>>,
  request: FastifyRequest,
): Promise<ResolvedCredential | null> {
  const { db, clock } = platform;
  const now = clock.now();
  if (request.headers['x-service-analytics-key'] !== undefined) throw new ServiceError('forbidden', INGEST_KEY_REFUSED);

  const authz = request.headers.authorization;
  if (authz !== undefined) {
    const m = /^Bearer +(\S+)\s*$/i.exec(authz);
    if (!m) throw unauthorized('Authorization must be "Bearer <token>"');
    const token = m[1];
    const hash = tokenHash(token);

    if (wellFormed(token, TOKEN_PREFIX.mcpToken)) {
      // Bound to the MCP endpoint (its resource): anywhere else only as that endpoint's own in-process call.
      const path = request.url.split('?')[0]!;
      const internal = request.headers[INTERNAL_CALL_HEADER] === INTERNAL_CALL_SECRET;
      if (path !== MCP_PATH && !internal) throw unauthorized(`this token is for the MCP endpoint (${MCP_PATH}) only`);
      const row = await credentialsRepository.mcpToken(db, hash);
      if (!row || new Date(row.expires_at).getTime() <= now) throw unauthorized('unknown, expired or revoked MCP token');
      if (platform.config && row.resource !== `${publicBaseUrl(platform.config)}${MCP_PATH}`) throw unauthorized('this token was issued for another resource');
      if (stale(row.last_used_at, now)) await credentialsRepository.touch(db, 'mcp', row.id, now).catch(unlessDiskFull);
      return { carrier: 'bearer', credential: { kind: 'cli', userId: row.user_id, tokenId: row.id } };
    }

    if (wellFormed(token, TOKEN_PREFIX.cliToken)) {
      const row = await credentialsRepository.cliToken(db, hash);
      if (!row) throw unauthorized('unknown or revoked CLI token');
      if (stale(row.last_used_at, now)) await credentialsRepository.touch(db, 'cli', row.id, now).catch(unlessDiskFull);
      return { carrier: 'bearer', credential: { kind: 'cli', userId: row.user_id, tokenId: row.id } };
    }

    const isLive = wellFormed(token, TOKEN_PREFIX.liveKey);
    const isTest = wellFormed(token, TOKEN_PREFIX.testKey);
    const isIngest = wellFormed(token, TOKEN_PREFIX.ingestKey);
    if (isLive || isTest || isIngest) {
      const kind = isLive ? 'live' : isTest ? 'test' : 'ingest';
      const row = await credentialsRepository.apiKey(db, hash, kind);
      if (!row) throw unauthorized('unknown or revoked API key');
      if (kind === 'ingest') throw new ServiceError('forbidden', INGEST_KEY_REFUSED);
      if (stale(row.last_used_at, now)) await credentialsRepository.touch(db, 'key', row.id, now).catch(unlessDiskFull);
      const scopes = row.scopes.filter((s): s is Scope => s in SCOPES);
      return { carrier: 'bearer', credential: { kind: 'project_key', keyId: row.id, projectId: row.project_id, scopes, mode: kind } };
    }
    throw unauthorized('malformed token: expected a cx_cli_, cx_live_, cx_test_ or cxm_ token');
  }

  const cookie = request.cookies?.[SESSION_COOKIE];
  if (cookie === undefined) return null;
  if (!wellFormed(cookie, TOKEN_PREFIX.session)) throw unauthorized('invalid session; sign in again');
  const row = await credentialsRepository.session(db, tokenHash(cookie), now);
  if (!row) throw unauthorized('session expired or signed out; sign in again');
  if (stale(row.last_used_at, now)) await credentialsRepository.touch(db, 'session', row.id, now).catch(unlessDiskFull);
  return { carrier: 'cookie', credential: { kind: 'session', userId: row.user_id, sessionId: row.id } };
}
