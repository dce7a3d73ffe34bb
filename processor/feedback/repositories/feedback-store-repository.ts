import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * The feedback table as the pipeline writes it (platform/migrations/relational/0032_feedback.sql): stored once per
 * project and feedback id, linked to the issue of the event it names, pruned by age. Event ids are looked up in the
 * error ledger (error_events_consumed) by the edge's id or the SDK's own (`client_event_id`), always within the
 * feedback's project: a tenant naming another project's event links to nothing.
 */
export interface FeedbackRow {
  project_id: string;
  id: string;
  source: 'feedback' | 'user_report';
  event_id: string | null;
  group_id: string | null;
  environment: string;
  name: string | null;
  email: string | null;
  message: string;
  url: string | null;
  release: string | null;
  /** ISO time, or null when the client's time was not one. */
  client_time: string | null;
  received_at: string;
}

export interface FeedbackStoreRepository {
  /** The issue of each (project, event id) the ledger holds as accepted: key `${projectId}\n${eventId}`. */
  issuesOfEvents(db: Queryable, refs: Array<{ projectId: string; eventId: string }>): Promise<Map<string, string>>;
  /** Insert rows not stored before; returns the `${projectId}\n${id}` keys inserted (the rest are duplicates). */
  insert(db: Queryable, rows: FeedbackRow[]): Promise<Set<string>>;
  /** Copy the issue onto feedback received within `windowSec` whose event the ledger now holds; at most `limit` rows. */
  linkPending(db: Queryable, windowSec: number, limit: number): Promise<number>;
  /** Delete feedback received longer than `keepSec` ago (database time), at most `limit`; returns how many. */
  pruneOlderThan(db: Queryable, keepSec: number, limit: number): Promise<number>;
}

/** The accepted ledger rows that name an event by either id, with the feedback-side key. */
const LEDGER_MATCH = `
  SELECT c.project_id, c.event_id AS ref, c.group_id FROM error_events_consumed c
   WHERE c.outcome = 'accepted' AND c.group_id IS NOT NULL AND (c.project_id, c.event_id) IN (SELECT * FROM refs)
  UNION ALL
  SELECT c.project_id, c.client_event_id AS ref, c.group_id FROM error_events_consumed c
   WHERE c.outcome = 'accepted' AND c.group_id IS NOT NULL AND c.client_event_id IS NOT NULL
     AND (c.project_id, c.client_event_id) IN (SELECT * FROM refs)`;

export const feedbackStoreRepository: FeedbackStoreRepository = {
  async issuesOfEvents(db, refs) {
    if (!refs.length) return new Map();
    const r = await db.query<{ project_id: string; ref: string; group_id: string }>(
      `WITH refs AS (SELECT * FROM unnest($1::text[], $2::text[]) AS x(project_id, event_id)) ${LEDGER_MATCH}`,
      [refs.map((x) => x.projectId), refs.map((x) => x.eventId)],
    );
    return new Map(r.rows.map((x) => [`${x.project_id}\n${x.ref}`, x.group_id]));
  },

  async insert(db, unordered) {
    if (!unordered.length) return new Set();
    // A fixed order, so two deliveries of overlapping items wait on each other instead of deadlocking.
    const rows = [...unordered].sort((a, b) => (a.project_id + a.id < b.project_id + b.id ? -1 : 1));
    const r = await db.query<{ project_id: string; id: string }>(
      `INSERT INTO feedback (project_id, id, source, event_id, group_id, environment, name, email, message, url, release, client_time, received_at)
       SELECT x.project_id, x.id, x.source, x.event_id, x.group_id, x.environment, x.name, x.email, x.message, x.url, x.release, x.client_time, x.received_at
         FROM jsonb_to_recordset($1::jsonb) AS x(project_id text, id text, source text, event_id text, group_id text, environment text, name text,
              email text, message text, url text, release text, client_time timestamptz, received_at timestamptz)
         JOIN projects p ON p.id = x.project_id
       ON CONFLICT (project_id, id) DO NOTHING RETURNING project_id, id`,
      [JSON.stringify(rows)],
    );
    return new Set(r.rows.map((x) => `${x.project_id}\n${x.id}`));
  },

  async linkPending(db, windowSec, limit) {
    const r = await db.query(
      `WITH refs AS (
         SELECT project_id, event_id FROM feedback
          WHERE group_id IS NULL AND event_id IS NOT NULL AND received_at > now() - make_interval(secs => $1)
          ORDER BY received_at DESC LIMIT $2),
       found AS (${LEDGER_MATCH})
       UPDATE feedback f SET group_id = found.group_id FROM found
        WHERE f.project_id = found.project_id AND f.event_id = found.ref AND f.group_id IS NULL`,
      [windowSec, limit],
    );
    return r.rowCount;
  },

  async pruneOlderThan(db, keepSec, limit) {
    const r = await db.query(
      `DELETE FROM feedback WHERE (project_id, id) IN (
         SELECT project_id, id FROM feedback WHERE received_at < now() - make_interval(secs => $1) LIMIT $2)`,
      [keepSec, limit],
    );
    return r.rowCount;
  },
};
