import { randomInt } from 'node:crypto';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { CliToken } from '../../schemas/api/accounts.ts';

/**
 * CLI device login (RFC 8628 shape): start -> approve in a signed-in console session -> poll.
 * The device code is a secret (stored hashed); the user code is what a person types, from an
 * alphabet without look-alike characters. A device code yields its `cx_cli_` token exactly once.
 */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const DEVICE_CODE_PREFIX = 'cxd_';

export function newUserCode(): string {
  let s = '';
  for (let i = 0; i < 8; i++) s += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return s;
}

/** `abcd-efgh`, `ABCDEFGH` and `ABCD EFGH` are the same code. */
export function normalizeUserCode(input: string): string {
  return input.toUpperCase().replace(/[^A-Z]/g, '');
}
export const formatUserCode = (c: string) => `${c.slice(0, 4)}-${c.slice(4)}`;

export async function startDeviceLogin(db: Queryable, clientName: string, now: number) {
  // Unused codes do not pile up: each start deletes some that expired a while ago (an expired code still
  // answers expired_token to a late poll for keepExpiredMs, then it is gone). Bounded per start.
  await db.query('DELETE FROM cli_device_codes WHERE id IN (SELECT id FROM cli_device_codes WHERE expires_at < $1 LIMIT 100)', [
    new Date(now - LIMITS.cliDeviceCode.keepExpiredMs),
  ]);
  const deviceCode = newToken(DEVICE_CODE_PREFIX);
  const expiresAt = new Date(now + LIMITS.cliDeviceCode.ttlMs);
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    const { rowCount } = await db.query(
      'INSERT INTO cli_device_codes (id, device_code_hash, user_code, client_name, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_code) DO NOTHING',
      [newId('dev_'), tokenHash(deviceCode), userCode, clientName, new Date(now), expiresAt],
    );
    if (rowCount === 1) return { deviceCode, userCode, expiresInSec: Math.floor(LIMITS.cliDeviceCode.ttlMs / 1000) };
    if (attempt > 5) throw new Error('could not allocate a unique user code');
  }
}

export async function approveDeviceLogin(db: Queryable, userCode: string, userId: string, now: number): Promise<{ clientName: string }> {
  const code = normalizeUserCode(userCode);
  const { rows } = await db.query<{ id: string; status: string; expires_at: Date | string; client_name: string }>(
    'SELECT id, status, expires_at, client_name FROM cli_device_codes WHERE user_code = $1',
    [code],
  );
  const row = rows[0];
  if (!row || row.status !== 'pending') throw new ServiceError('not_found', 'no pending login with this code; start again from the CLI');
  if (new Date(row.expires_at).getTime() <= now) throw new ServiceError('expired_token', 'this code expired; start again from the CLI');
  const upd = await db.query("UPDATE cli_device_codes SET status = 'approved', user_id = $2 WHERE id = $1 AND status = 'pending'", [row.id, userId]);
  if (upd.rowCount !== 1) throw new ServiceError('not_found', 'no pending login with this code; start again from the CLI');
  return { clientName: row.client_name };
}

/** Poll: 428 until approved, then the token once; expired or already used codes are 410. */
export async function pollDeviceLogin(db: RelationalStore, deviceCode: string, now: number): Promise<{ token: string; tokenId: string; userId: string }> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string; status: string; expires_at: Date | string; user_id: string | null; client_name: string }>(
      'SELECT id, status, expires_at, user_id, client_name FROM cli_device_codes WHERE device_code_hash = $1 FOR UPDATE',
      [tokenHash(deviceCode)],
    );
    const row = rows[0];
    if (!row) throw new ServiceError('not_found', 'unknown device code');
    if (row.status === 'consumed') throw new ServiceError('expired_token', 'this device code was already exchanged for a token; start a new login');
    if (row.status === 'denied') throw new ServiceError('forbidden', 'the login was denied');
    if (new Date(row.expires_at).getTime() <= now) throw new ServiceError('expired_token', 'the device code expired; start a new login');
    await tx.query('UPDATE cli_device_codes SET last_polled_at = $2 WHERE id = $1', [row.id, new Date(now)]);
    if (row.status !== 'approved' || !row.user_id) {
      throw new ServiceError('authorization_pending', 'waiting for approval in the console', {
        retryAfterSec: LIMITS.cliDeviceCode.pollIntervalSec,
        body: { interval: LIMITS.cliDeviceCode.pollIntervalSec },
      });
    }
    const consumed = await tx.query("UPDATE cli_device_codes SET status = 'consumed' WHERE id = $1 AND status = 'approved'", [row.id]);
    if (consumed.rowCount !== 1) throw new ServiceError('expired_token', 'this device code was already exchanged for a token; start a new login');
    const created = await createCliToken(tx, row.user_id, row.client_name, now);
    return { token: created.token, tokenId: created.id, userId: row.user_id };
  });
}

export async function createCliToken(db: Queryable, userId: string, name: string, now: number) {
  const id = newId('clt_');
  const token = newToken(TOKEN_PREFIX.cliToken);
  await db.query('INSERT INTO cli_tokens (id, user_id, token_hash, name, hint, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    userId,
    tokenHash(token),
    name,
    token.slice(TOKEN_PREFIX.cliToken.length, TOKEN_PREFIX.cliToken.length + 4),
    new Date(now),
  ]);
  return { id, token };
}

interface CliTokenRow {
  id: string;
  name: string;
  hint: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const toCliToken = (r: CliTokenRow): CliToken => ({
  id: r.id,
  name: r.name,
  hint: `${TOKEN_PREFIX.cliToken}${r.hint}…`,
  createdAt: new Date(r.created_at).toISOString(),
  lastUsedAt: iso(r.last_used_at),
  revokedAt: iso(r.revoked_at),
  revoked: r.revoked_at !== null,
});

export async function listCliTokens(db: Queryable, userId: string) {
  const { rows } = await db.query<CliTokenRow>(
    'SELECT id, name, hint, created_at, last_used_at, revoked_at FROM cli_tokens WHERE user_id = $1 ORDER BY created_at DESC, id',
    [userId],
  );
  return rows.map(toCliToken);
}

export async function revokeCliToken(db: Queryable, userId: string, id: string, now: number) {
  const { rows } = await db.query<CliTokenRow>(
    'UPDATE cli_tokens SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND user_id = $2 RETURNING id, name, hint, created_at, last_used_at, revoked_at',
    [id, userId, new Date(now)],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'no such CLI token');
  return toCliToken(rows[0]);
}
