import { randomInt } from 'node:crypto';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { CliToken, DeviceLogin } from '../../schemas/api/accounts.ts';

/**
 * CLI device login (RFC 8628 shape): start -> approve in a signed-in console session -> poll.
 * The device code is a secret (stored hashed); the user code is what a person types, from an
 * alphabet without look-alike characters. A device code yields its `cx_cli_` token exactly once.
 * Per the RFC (issue 38): a start keeps where it came from (caller IP, user agent) and when, which the approval page
 * shows before anyone approves (§5.4); each login keeps its own poll interval, and a poll sooner than it answers
 * `slow_down` and adds 5 s to it for every later poll (§3.5), up to a minute.
 */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const DEVICE_CODE_PREFIX = 'cxd_';
const SLOW_DOWN_STEP_SEC = 5;
const MAX_POLL_INTERVAL_SEC = 60;
/** A user agent is kept only to be shown, and shown only so long. */
const USER_AGENT_CHARS = 300;

function newUserCode(): string {
  let s = '';
  for (let i = 0; i < 8; i++) s += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return s;
}

/** `abcd-efgh`, `ABCDEFGH` and `ABCD EFGH` are the same code. */
const normalizeUserCode = (input: string) => input.toUpperCase().replace(/[^A-Z]/g, '');
export const formatUserCode = (c: string) => `${c.slice(0, 4)}-${c.slice(4)}`;

export interface DeviceLoginOrigin {
  ip: string;
  userAgent: string | undefined;
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

type PollOutcome = { kind: 'token'; token: string; tokenId: string; userId: string } | { kind: 'pending' | 'slow_down'; interval: number };

export const cliRepository = {
  async startDeviceLogin(db: Queryable, clientName: string, origin: DeviceLoginOrigin, now: number) {
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
        `INSERT INTO cli_device_codes (id, device_code_hash, user_code, client_name, created_at, expires_at, request_ip, request_user_agent, poll_interval_sec)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (user_code) DO NOTHING`,
        [
          newId('dev_'),
          tokenHash(deviceCode),
          userCode,
          clientName,
          new Date(now),
          expiresAt,
          origin.ip,
          origin.userAgent?.slice(0, USER_AGENT_CHARS) ?? null,
          LIMITS.cliDeviceCode.pollIntervalSec,
        ],
      );
      if (rowCount === 1) return { deviceCode, userCode, expiresInSec: Math.floor(LIMITS.cliDeviceCode.ttlMs / 1000) };
      if (attempt > 5) throw new Error('could not allocate a unique user code');
    }
  },

  /** A pending login as the approval page shows it: who asks, and where and when the login started. */
  async describeDeviceLogin(db: Queryable, userCode: string, now: number): Promise<DeviceLogin> {
    const { rows } = await db.query<{
      user_code: string;
      status: string;
      client_name: string;
      created_at: Date | string;
      expires_at: Date | string;
      request_ip: string | null;
      request_user_agent: string | null;
    }>('SELECT user_code, status, client_name, created_at, expires_at, request_ip, request_user_agent FROM cli_device_codes WHERE user_code = $1', [
      normalizeUserCode(userCode),
    ]);
    const row = rows[0];
    if (!row || row.status !== 'pending') throw new ServiceError('not_found', 'no pending login with this code; start again from the CLI');
    if (new Date(row.expires_at).getTime() <= now) throw new ServiceError('expired_token', 'this code expired; start again from the CLI');
    return {
      user_code: formatUserCode(row.user_code),
      client_name: row.client_name,
      started_at: new Date(row.created_at).toISOString(),
      expires_at: new Date(row.expires_at).toISOString(),
      ip: row.request_ip,
      user_agent: row.request_user_agent,
    };
  },

  async approveDeviceLogin(db: Queryable, userCode: string, userId: string, now: number): Promise<{ clientName: string }> {
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
  },

  /**
   * Poll: 428 until approved (429 slow_down when sooner than this login's interval, which then grows by 5 s), then the
   * token once; expired or already used codes are 410. The poll's time and interval are written whatever it answers, so
   * the outcome is returned from the transaction and thrown after it commits.
   */
  async pollDeviceLogin(db: RelationalStore, deviceCode: string, now: number): Promise<{ token: string; tokenId: string; userId: string }> {
    const out = await db.transaction(async (tx): Promise<PollOutcome> => {
      const { rows } = await tx.query<{
        id: string;
        status: string;
        expires_at: Date | string;
        user_id: string | null;
        client_name: string;
        last_polled_at: Date | string | null;
        poll_interval_sec: number | null;
      }>(
        'SELECT id, status, expires_at, user_id, client_name, last_polled_at, poll_interval_sec FROM cli_device_codes WHERE device_code_hash = $1 FOR UPDATE',
        [tokenHash(deviceCode)],
      );
      const row = rows[0];
      if (!row) throw new ServiceError('not_found', 'unknown device code');
      if (row.status === 'consumed') throw new ServiceError('expired_token', 'this device code was already exchanged for a token; start a new login');
      if (row.status === 'denied') throw new ServiceError('forbidden', 'the login was denied');
      if (new Date(row.expires_at).getTime() <= now) throw new ServiceError('expired_token', 'the device code expired; start a new login');
      if (row.status !== 'approved' || !row.user_id) {
        let interval = row.poll_interval_sec ?? LIMITS.cliDeviceCode.pollIntervalSec;
        const tooSoon = row.last_polled_at !== null && now - new Date(row.last_polled_at).getTime() < interval * 1000;
        if (tooSoon) interval = Math.min(interval + SLOW_DOWN_STEP_SEC, MAX_POLL_INTERVAL_SEC);
        await tx.query('UPDATE cli_device_codes SET last_polled_at = $2, poll_interval_sec = $3 WHERE id = $1', [row.id, new Date(now), interval]);
        return { kind: tooSoon ? 'slow_down' : 'pending', interval };
      }
      await tx.query('UPDATE cli_device_codes SET last_polled_at = $2 WHERE id = $1', [row.id, new Date(now)]);
      const consumed = await tx.query("UPDATE cli_device_codes SET status = 'consumed' WHERE id = $1 AND status = 'approved'", [row.id]);
      if (consumed.rowCount !== 1) throw new ServiceError('expired_token', 'this device code was already exchanged for a token; start a new login');
      const created = await cliRepository.createToken(tx, row.user_id, row.client_name, now);
      return { kind: 'token', token: created.token, tokenId: created.id, userId: row.user_id };
    });
    if (out.kind === 'token') return out;
    const retry = { retryAfterSec: out.interval, body: { interval: out.interval } };
    if (out.kind === 'slow_down') throw new ServiceError('slow_down', `polling too fast: poll every ${out.interval} s from now on`, retry);
    throw new ServiceError('authorization_pending', 'waiting for approval in the console', retry);
  },

  async createToken(db: Queryable, userId: string, name: string, now: number) {
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
  },

  async listTokens(db: Queryable, userId: string) {
    const { rows } = await db.query<CliTokenRow>(
      'SELECT id, name, hint, created_at, last_used_at, revoked_at FROM cli_tokens WHERE user_id = $1 ORDER BY created_at DESC, id',
      [userId],
    );
    return rows.map(toCliToken);
  },

  async revokeToken(db: Queryable, userId: string, id: string, now: number) {
    const { rows } = await db.query<CliTokenRow>(
      'UPDATE cli_tokens SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND user_id = $2 RETURNING id, name, hint, created_at, last_used_at, revoked_at',
      [id, userId, new Date(now)],
    );
    if (!rows[0]) throw new ServiceError('not_found', 'no such CLI token');
    return toCliToken(rows[0]);
  },
};
