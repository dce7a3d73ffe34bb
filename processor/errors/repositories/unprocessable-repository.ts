import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * Events set aside as unprocessable (error_events_unprocessable): kept, scrubbed, with the error that
 * stopped them, until an operator replays them (service/unprocessable-cli.ts) or deletes them.
 */
export interface UnprocessableEvent {
  eventId: string;
  projectId: string;
  /** The one-event bus message (envelope v1) to publish again. */
  message: Buffer;
  error: string;
  attempts: number;
  setAsideAt: string;
}

export interface UnprocessableRepository {
  /** Keep an event; set aside again (after a replay that failed the same way), it counts one more attempt. */
  setAside(db: Queryable, e: { eventId: string; projectId: string; message: Buffer; error: string }): Promise<void>;
  list(db: Queryable, opts?: { eventIds?: string[]; limit?: number }): Promise<UnprocessableEvent[]>;
  remove(db: Queryable, eventIds: string[]): Promise<number>;
}

export const unprocessableRepository: UnprocessableRepository = {
  async setAside(db, e) {
    await db.query(
      `INSERT INTO error_events_unprocessable (event_id, project_id, message, error) VALUES ($1, $2, $3, $4)
       ON CONFLICT (event_id) DO UPDATE SET error = EXCLUDED.error, message = EXCLUDED.message,
         attempts = error_events_unprocessable.attempts + 1, set_aside_at = now()`,
      [e.eventId, e.projectId, e.message, e.error],
    );
  },

  async list(db, opts = {}) {
    const r = await db.query<{
      event_id: string;
      project_id: string;
      message: Buffer | Uint8Array;
      error: string;
      attempts: number;
      set_aside_at: Date | string;
    }>(
      `SELECT event_id, project_id, message, error, attempts, set_aside_at FROM error_events_unprocessable
        WHERE ($1::text[] IS NULL OR event_id = ANY($1::text[]))
        ORDER BY set_aside_at, event_id LIMIT $2`,
      [opts.eventIds ?? null, opts.limit ?? 1000],
    );
    return r.rows.map((x) => ({
      eventId: x.event_id,
      projectId: x.project_id,
      message: Buffer.from(x.message),
      error: x.error,
      attempts: Number(x.attempts),
      setAsideAt: new Date(x.set_aside_at).toISOString(),
    }));
  },

  async remove(db, eventIds) {
    if (!eventIds.length) return 0;
    return (await db.query('DELETE FROM error_events_unprocessable WHERE event_id = ANY($1::text[])', [eventIds])).rowCount;
  },
};
