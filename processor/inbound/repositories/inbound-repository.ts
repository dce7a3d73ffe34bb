import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { InboundProvider } from '../../../schemas/inbound.ts';

/** The processor's side of the inbound deliveries ledger (inbound_deliveries, migration 0018) and the code-host connections. */
export const inboundLedger = {
  /**
   * Mark a delivery acted on, with what came of it (`deploys: queued`, `skip_requested`, ...). False when an earlier
   * delivery of the same message marked it first: this one is a duplicate, and is not counted.
   */
  async markProcessed(db: Queryable, provider: InboundProvider, deliveryId: string, outcome: string, now: number): Promise<boolean> {
    const r = await db.query(
      'UPDATE inbound_deliveries SET processed_at = $3, outcome = $4 WHERE provider = $1 AND delivery_id = $2 AND processed_at IS NULL RETURNING delivery_id',
      [provider, deliveryId, new Date(now), outcome],
    );
    return r.rows.length > 0;
  },
  /** Ledger rows older than `before` (providers redeliver for 3 days; kept 7), at most `limit`. */
  async pruneOlderThan(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM inbound_deliveries WHERE (provider, delivery_id) IN (SELECT provider, delivery_id FROM inbound_deliveries WHERE received_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};

export const codeHostConnections = {
  /** The projects a repository (owner/name, any case) is connected to, with each one's default branch. */
  async projectsOf(db: Queryable, repository: string): Promise<Array<{ projectId: string; defaultBranch: string }>> {
    const r = await db.query<{ project_id: string; default_branch: string }>(
      `SELECT c.project_id, p.default_branch FROM github_connections c JOIN projects p ON p.id = c.project_id WHERE lower(c.repo_full_name) = lower($1) ORDER BY c.project_id`,
      [repository],
    );
    return r.rows.map((x) => ({ projectId: x.project_id, defaultBranch: x.default_branch }));
  },
};
