import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { hashPassword } from '../auth/passwords.ts';
import type { User } from '../../schemas/api/accounts.ts';

/** Users, their console sessions and the browsers they signed in from. Emails are stored lower-cased: one account per address. */
interface UserRow {
  id: string;
  email: string;
  name: string | null;
  created_at: Date | string;
}

export const toUser = (r: UserRow): User => ({ id: r.id, email: r.email, name: r.name, createdAt: new Date(r.created_at).toISOString() });

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export const usersRepository = {
  /** Create a user with a hashed password; 409 email_taken when the address has an account. */
  async createUser(db: Queryable, input: { email: string; password: string; name?: string | null }): Promise<User> {
    const id = newId('usr_');
    const hash = await hashPassword(input.password);
    const { rows } = await db.query<UserRow>(
      'INSERT INTO users (id, email, password_hash, name) VALUES ($1, $2, $3, $4) ON CONFLICT (email) DO NOTHING RETURNING id, email, name, created_at',
      [id, normalizeEmail(input.email), hash, input.name ?? null],
    );
    if (!rows[0]) throw new ServiceError('email_taken', 'an account with this email exists');
    return toUser(rows[0]);
  },

  async findUserForSignIn(db: Queryable, email: string): Promise<(User & { passwordHash: string }) | null> {
    const { rows } = await db.query<UserRow & { password_hash: string }>('SELECT id, email, name, created_at, password_hash FROM users WHERE email = $1', [
      normalizeEmail(email),
    ]);
    const r = rows[0];
    return r ? { ...toUser(r), passwordHash: r.password_hash } : null;
  },

  async getUser(db: Queryable, id: string): Promise<User | null> {
    const { rows } = await db.query<UserRow>('SELECT id, email, name, created_at FROM users WHERE id = $1', [id]);
    return rows[0] ? toUser(rows[0]) : null;
  },

  /** A new session; the `cxs_` token is returned once (for the cookie) and stored only hashed. */
  async createSession(db: Queryable, userId: string, now: number): Promise<{ id: string; token: string; expiresAt: Date }> {
    const id = newId('ses_');
    const token = newToken(TOKEN_PREFIX.session);
    const expiresAt = new Date(now + LIMITS.sessionTtlMs);
    await db.query('INSERT INTO sessions (id, token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)', [
      id,
      tokenHash(token),
      userId,
      new Date(now),
      expiresAt,
    ]);
    return { id, token, expiresAt };
  },

  async revokeSession(db: Queryable, sessionId: string, now: number): Promise<void> {
    await db.query('UPDATE sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [sessionId, new Date(now)]);
  },

  /** Whether the user signed in from the browser whose device cookie hashes to `deviceHash` (sign-in-limits.ts). */
  async isKnownDevice(db: Queryable, deviceHash: string, userId: string): Promise<boolean> {
    const r = await db.query('SELECT 1 FROM sign_in_devices WHERE token_hash = $1 AND user_id = $2', [deviceHash, userId]);
    return r.rows.length > 0;
  },

  /** Remember a browser the user signed in from (or note its new use). */
  async rememberDevice(db: Queryable, deviceHash: string, userId: string): Promise<void> {
    await db.query('INSERT INTO sign_in_devices (token_hash, user_id) VALUES ($1, $2) ON CONFLICT (token_hash) DO UPDATE SET last_used_at = now()', [
      deviceHash,
      userId,
    ]);
  },
};
