import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { Page } from '../../schemas/api/common.ts';
import type { Feedback, FeedbackListQuery } from '../../schemas/api/feedback.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { timeCursor } from '../time-cursor.ts';

/**
 * User feedback as the API reads it (platform/migrations/relational/0032_feedback.sql), newest first by
 * (received_at, id). Feedback that arrived before its error event has no issue on its row until the processor's pass
 * copies it (processor/feedback/feedback-retention.ts); until then the link is resolved here, at read time, from the
 * error ledger (by the edge's event id or the SDK's own), so it shows as soon as the event is stored.
 */
interface FeedbackRow {
  id: string;
  source: Feedback['source'];
  event_id: string | null;
  issue: string | null;
  environment: Feedback['environment'];
  name: string | null;
  email: string | null;
  message: string;
  url: string | null;
  release: string | null;
  client_time: Date | string | null;
  received_at: Date | string;
}

const toFeedback = (r: FeedbackRow): Feedback => ({
  id: r.id,
  source: r.source,
  eventId: r.event_id,
  groupId: r.issue,
  environment: r.environment,
  name: r.name,
  email: r.email,
  message: r.message,
  url: r.url,
  release: r.release,
  clientTime: r.client_time === null ? null : new Date(r.client_time).toISOString(),
  receivedAt: new Date(r.received_at).toISOString(),
});

/** The issue of a row's event from the ledger, for a row not linked yet. */
const LEDGER_ISSUE = `LEFT JOIN LATERAL (
    SELECT c.group_id FROM error_events_consumed c
     WHERE f.group_id IS NULL AND f.event_id IS NOT NULL AND c.project_id = f.project_id AND c.outcome = 'accepted'
       AND c.group_id IS NOT NULL AND (c.event_id = f.event_id OR c.client_event_id = f.event_id)
     LIMIT 1) l ON true`;

const COLUMNS = `f.id, f.source, f.event_id, COALESCE(f.group_id, l.group_id) AS issue, f.environment, f.name, f.email, f.message, f.url,
  f.release, f.client_time, f.received_at`;

export const feedbackRepository = {
  /** The project's feedback, or (with `issueId`) the feedback about that issue's events; 404 for an issue not in the project. */
  async list(db: Queryable, projectId: string, query: FeedbackListQuery & { issueId?: string }): Promise<Page<Feedback>> {
    const after = query.cursor === undefined ? undefined : timeCursor.decode(query.cursor);
    if (query.issueId !== undefined) {
      const g = await db.query('SELECT 1 FROM error_groups WHERE id = $1 AND project_id = $2', [query.issueId, projectId]);
      if (!g.rows.length) throw new ServiceError('not_found', 'no such issue');
    }
    // An issue's feedback: the rows linked to it (an index range) and the few not linked yet whose event the ledger
    // now places in it (the partial index of unlinked rows); the project's: every row, its link resolved if missing.
    const scope =
      query.issueId === undefined
        ? '$5::text IS NULL'
        : `(f.group_id = $5::text OR (f.group_id IS NULL AND f.event_id IS NOT NULL AND EXISTS (
             SELECT 1 FROM error_events_consumed c
              WHERE c.project_id = f.project_id AND c.outcome = 'accepted' AND c.group_id = $5
                AND (c.event_id = f.event_id OR c.client_event_id = f.event_id))))`;
    const r = await db.query<FeedbackRow>(
      `SELECT ${COLUMNS} FROM feedback f ${LEDGER_ISSUE}
        WHERE f.project_id = $1
          AND ($2::text IS NULL OR f.environment = $2)
          AND ($3::timestamptz IS NULL OR (f.received_at, f.id) < ($3::timestamptz, $4::text))
          AND ${scope}
        ORDER BY f.received_at DESC, f.id DESC LIMIT $6`,
      [projectId, query.environment ?? null, after?.at ?? null, after?.id ?? '', query.issueId ?? null, query.limit + 1],
    );
    return timeCursor.page(r.rows, query.limit, toFeedback, (x) => ({ at: x.received_at, id: x.id }));
  },
};
