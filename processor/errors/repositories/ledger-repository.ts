import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * The consumed-events ledger (error_events_consumed): every event id the pipeline consumed, with what
 * became of it. It turns re-delivery into no change (an id already there was consumed before), and it
 * remembers accepted events' groups and environments so a re-delivery can rewrite their ClickHouse rows.
 * Kept for the re-delivery window only (ledger-retention.ts).
 */
export interface LedgerClaim {
  eventId: string;
  projectId: string;
  /** Known when the event got as far as environment stamping. */
  groupId: string | null;
  environment: string | null;
  /** The SDK's own id of the event (client-event-id.ts), which feedback names it by. */
  clientEventId?: string | null;
}

export interface LedgerDrop {
  event_id: string;
  drop_reason: string;
  environment: string | null;
}

export interface LedgerRepository {
  /** Claim every id, written as `accepted`; returns the ids that were new (the rest were consumed before). */
  claim(tx: Queryable, claims: LedgerClaim[]): Promise<Set<string>>;
  /** Mark claimed events as dropped, with the reason (same transaction as the claim). */
  recordDrops(tx: Queryable, drops: LedgerDrop[]): Promise<void>;
  /** Group and environment of the ids an earlier delivery accepted. */
  acceptedEarlier(tx: Queryable, eventIds: string[]): Promise<Map<string, { groupId: string; environment: string }>>;
  /** Delete rows consumed longer than `keepSec` ago (database time), at most `limit`; returns how many. */
  pruneOlderThan(db: Queryable, keepSec: number, limit: number): Promise<number>;
}

export const ledgerRepository: LedgerRepository = {
  async claim(tx, unordered) {
    if (!unordered.length) return new Set();
    // A fixed order, so two processors claiming overlapping ids (a re-delivery racing the original) wait
    // on each other instead of deadlocking.
    const claims = [...unordered].sort((a, b) => (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0));
    const r = await tx.query<{ event_id: string }>(
      `INSERT INTO error_events_consumed (event_id, project_id, outcome, group_id, environment, client_event_id)
       SELECT id, project, 'accepted', grp, env, client FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(id, project, grp, env, client)
       ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
      [
        claims.map((c) => c.eventId),
        claims.map((c) => c.projectId),
        claims.map((c) => c.groupId),
        claims.map((c) => c.environment),
        claims.map((c) => c.clientEventId ?? null),
      ],
    );
    return new Set(r.rows.map((x) => x.event_id));
  },

  async recordDrops(tx, rows) {
    if (!rows.length) return;
    await tx.query(
      `UPDATE error_events_consumed c SET outcome = 'dropped', drop_reason = x.drop_reason, group_id = NULL, environment = x.environment
         FROM jsonb_to_recordset($1::jsonb) AS x(event_id text, drop_reason text, environment text)
        WHERE c.event_id = x.event_id`,
      [JSON.stringify(rows)],
    );
  },

  async acceptedEarlier(tx, eventIds) {
    if (!eventIds.length) return new Map();
    const r = await tx.query<{ event_id: string; group_id: string; environment: string }>(
      `SELECT event_id, group_id, environment FROM error_events_consumed WHERE event_id = ANY($1::text[]) AND outcome = 'accepted'`,
      [eventIds],
    );
    return new Map(r.rows.map((x) => [x.event_id, { groupId: x.group_id, environment: x.environment }]));
  },

  async pruneOlderThan(db, keepSec, limit) {
    const r = await db.query(
      `DELETE FROM error_events_consumed WHERE event_id IN (
         SELECT event_id FROM error_events_consumed WHERE consumed_at < now() - make_interval(secs => $1) LIMIT $2)`,
      [keepSec, limit],
    );
    return r.rowCount;
  },
};
