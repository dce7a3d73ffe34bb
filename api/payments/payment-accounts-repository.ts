import type { Queryable } from '../../platform/ports/relational-store.ts';

/**
 * Connected Stripe accounts as the API keeps them (payment_accounts, migrations 0019 and 0029), and the one-use states
 * of the connect flow (payment_connect_states). connected_via: 'stripe_oauth' when Stripe's token exchange named the
 * account for a signed-in member; 'typed' for a row made before from an id someone typed, which proves nothing.
 */
export interface PaymentAccountRow {
  account_id: string;
  connected_via: 'stripe_oauth' | 'typed';
  livemode: boolean | null;
  created_at: Date | string;
}

export interface ConnectStateRow {
  project_id: string;
  user_id: string;
  expires_at: Date | string;
}

export const paymentAccountsRepository = {
  async list(db: Queryable, projectId: string): Promise<PaymentAccountRow[]> {
    const r = await db.query<PaymentAccountRow>(
      'SELECT account_id, connected_via, livemode, created_at FROM payment_accounts WHERE project_id = $1 ORDER BY created_at, account_id',
      [projectId],
    );
    return r.rows;
  },

  /** Remove one of the project's accounts; how it was connected, or undefined when the project has no such account. */
  async remove(db: Queryable, projectId: string, accountId: string): Promise<PaymentAccountRow['connected_via'] | undefined> {
    const r = await db.query<{ connected_via: PaymentAccountRow['connected_via'] }>(
      'DELETE FROM payment_accounts WHERE project_id = $1 AND account_id = $2 RETURNING connected_via',
      [projectId, accountId],
    );
    return r.rows[0]?.connected_via;
  },

  /**
   * Bind an account Stripe's exchange named to the project. It takes over a typed row wherever it is (the typed row
   * proved nothing: it may be a stranger's claim on this very account), and renews the project's own; an account
   * another project connected through Stripe stays there (false).
   */
  async bindProven(db: Queryable, b: { accountId: string; projectId: string; livemode: boolean; userId: string; now: number }): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO payment_accounts (account_id, project_id, created_at, connected_via, livemode, connected_by)
       VALUES ($1, $2, $3, 'stripe_oauth', $4, $5)
       ON CONFLICT (account_id) DO UPDATE SET project_id = EXCLUDED.project_id, created_at = EXCLUDED.created_at,
         connected_via = 'stripe_oauth', livemode = EXCLUDED.livemode, connected_by = EXCLUDED.connected_by
       WHERE payment_accounts.connected_via = 'typed' OR payment_accounts.project_id = EXCLUDED.project_id
       RETURNING account_id`,
      [b.accountId, b.projectId, new Date(b.now), b.livemode, b.userId],
    );
    return r.rows.length === 1;
  },

  /** Keep a new state; a member's expired states go, and past `keep` live ones the oldest go too. */
  async addState(
    db: Queryable,
    s: { stateHash: string; projectId: string; userId: string; sessionId: string; now: number; expiresAt: number; keep: number },
  ): Promise<void> {
    await db.query('DELETE FROM payment_connect_states WHERE expires_at <= $1', [new Date(s.now)]);
    await db.query(
      `DELETE FROM payment_connect_states WHERE user_id = $1 AND state_hash IN (
         SELECT state_hash FROM payment_connect_states WHERE user_id = $1 ORDER BY created_at DESC, state_hash OFFSET $2)`,
      [s.userId, s.keep - 1],
    );
    await db.query('INSERT INTO payment_connect_states (state_hash, project_id, user_id, session_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      s.stateHash,
      s.projectId,
      s.userId,
      s.sessionId,
      new Date(s.now),
      new Date(s.expiresAt),
    ]);
  },

  /** Use a state: it is gone after this, whatever follows. Only the session that started the flow can use it. */
  async takeState(db: Queryable, stateHash: string, sessionId: string): Promise<ConnectStateRow | undefined> {
    const r = await db.query<ConnectStateRow>(
      'DELETE FROM payment_connect_states WHERE state_hash = $1 AND session_id = $2 RETURNING project_id, user_id, expires_at',
      [stateHash, sessionId],
    );
    return r.rows[0];
  },

  /** The project's slug when the user is (still) one of its members. */
  async memberProjectSlug(db: Queryable, projectId: string, userId: string): Promise<string | undefined> {
    const r = await db.query<{ slug: string }>(
      'SELECT p.slug FROM projects p JOIN project_members m ON m.project_id = p.id WHERE p.id = $1 AND m.user_id = $2',
      [projectId, userId],
    );
    return r.rows[0]?.slug;
  },
};
