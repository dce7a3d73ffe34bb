import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import { type MaintenanceRow } from '../../domain/uptime/written-status.ts';
import type { StatusIncident } from '../../schemas/api/status-incidents.ts';

/**
 * Incidents and maintenance people write (migration 0045): status_incidents, status_incident_updates and
 * status_maintenance, as the wire shapes of schemas/api/status-incidents.ts. A maintenance window's state is derived
 * from its times and the clock (never stored): scheduled, in progress (starts_at ≤ now < ends_at), completed, or
 * cancelled.
 */
export interface IncidentRow {
  id: string;
  project_id: string;
  title: string;
  impact: StatusIncident['impact'];
  status: StatusIncident['status'];
  monitor_ids: string[];
  automatic_incident_id: string | null;
  created_at: Date | string;
  resolved_at: Date | string | null;
}
interface UpdateRow {
  id: string;
  incident_id: string;
  status: StatusIncident['status'];
  message: string;
  created_at: Date | string;
}
const iso = (d: Date | string) => new Date(d).toISOString();

export const toStatusIncident = (r: IncidentRow, updates: UpdateRow[]): StatusIncident => ({
  id: r.id,
  kind: r.automatic_incident_id === null ? 'manual' : 'automatic',
  automaticIncidentId: r.automatic_incident_id,
  title: r.title,
  impact: r.impact,
  status: r.status,
  monitorIds: r.monitor_ids,
  createdAt: iso(r.created_at),
  resolvedAt: r.resolved_at === null ? null : iso(r.resolved_at),
  updates: updates.filter((u) => u.incident_id === r.id).map((u) => ({ id: u.id, status: u.status, message: u.message, at: iso(u.created_at) })),
});

export const writtenStatusRepository = {
  /** Which of these ids are monitors of the project. */
  async monitorsOf(db: Queryable, projectId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const r = await db.query<{ id: string }>('SELECT id FROM uptime_monitors WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, ids]);
    return new Set(r.rows.map((x) => x.id));
  },
  /** An automatic incident of the project: its monitor, to name an annotation after. */
  async automaticIncident(db: Queryable, projectId: string, id: string): Promise<{ monitor_id: string; name: string } | undefined> {
    const r = await db.query<{ monitor_id: string; name: string }>(
      'SELECT i.monitor_id, m.name FROM uptime_incidents i JOIN uptime_monitors m ON m.id = i.monitor_id WHERE i.project_id = $1 AND i.id = $2',
      [projectId, id],
    );
    return r.rows[0];
  },
  async countOpen(db: Queryable, projectId: string): Promise<number> {
    const r = await db.query<{ n: string }>('SELECT count(*) AS n FROM status_incidents WHERE project_id = $1 AND resolved_at IS NULL', [projectId]);
    return Number(r.rows[0]!.n);
  },
  /** A new incident with its first update; undefined when the automatic incident has an annotation already. */
  async createIncident(
    db: Queryable,
    projectId: string,
    v: {
      title: string;
      impact: StatusIncident['impact'];
      monitorIds: string[];
      status: StatusIncident['status'];
      message: string;
      automaticIncidentId: string | null;
    },
    now: number,
  ): Promise<string | undefined> {
    const id = newId('inc_');
    const at = new Date(now);
    // The incident and its first update in one statement: never an incident without an update.
    const r = await db.query(
      `WITH i AS (
         INSERT INTO status_incidents (id, project_id, title, impact, status, monitor_ids, automatic_incident_id, created_at, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING RETURNING id
       ), u AS (
         INSERT INTO status_incident_updates (id, incident_id, status, message, created_at) SELECT $10, i.id, $5, $11, $8 FROM i
       )
       SELECT id FROM i`,
      [id, projectId, v.title, v.impact, v.status, v.monitorIds, v.automaticIncidentId, at, v.status === 'resolved' ? at : null, newId('upd_'), v.message],
    );
    return r.rows.length ? id : undefined;
  },
  async incident(db: Queryable, projectId: string, id: string): Promise<StatusIncident | undefined> {
    const r = await db.query<IncidentRow>('SELECT * FROM status_incidents WHERE project_id = $1 AND id = $2', [projectId, id]);
    if (!r.rows[0]) return undefined;
    const u = await db.query<UpdateRow>('SELECT * FROM status_incident_updates WHERE incident_id = $1 ORDER BY created_at, id', [id]);
    return toStatusIncident(r.rows[0], u.rows);
  },
  /** The project's incidents, open ones first, then the newest; each with its newest `updates` updates. */
  async incidents(db: Queryable, projectId: string, opts: { resolvedSince?: Date; limit: number; updates: number }): Promise<StatusIncident[]> {
    const r = await db.query<IncidentRow>(
      `SELECT * FROM status_incidents WHERE project_id = $1 AND (resolved_at IS NULL OR $2::timestamptz IS NULL OR resolved_at >= $2)
       ORDER BY (resolved_at IS NULL) DESC, created_at DESC, id LIMIT $3`,
      [projectId, opts.resolvedSince ?? null, opts.limit],
    );
    if (!r.rows.length) return [];
    const u = await db.query<UpdateRow>(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY incident_id ORDER BY created_at DESC, id DESC) AS n
         FROM status_incident_updates WHERE incident_id = ANY($1::text[])) x WHERE n <= $2 ORDER BY created_at, id`,
      [r.rows.map((x) => x.id), opts.updates],
    );
    return r.rows.map((x) => toStatusIncident(x, u.rows));
  },
  async changeIncident(db: Queryable, projectId: string, id: string, v: { title?: string; impact?: string; monitorIds?: string[] }): Promise<boolean> {
    const r = await db.query(
      `UPDATE status_incidents SET title = COALESCE($3, title), impact = COALESCE($4, impact), monitor_ids = COALESCE($5, monitor_ids)
       WHERE project_id = $1 AND id = $2 RETURNING id`,
      [projectId, id, v.title ?? null, v.impact ?? null, v.monitorIds ?? null],
    );
    return r.rows.length > 0;
  },
  async countUpdates(db: Queryable, incidentId: string): Promise<number> {
    return Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM status_incident_updates WHERE incident_id = $1', [incidentId])).rows[0]!.n);
  },
  /**
   * An update, and the incident's status with it: `resolved` resolves it, any other reopens it. An update written in
   * the same millisecond as the one before it is stamped a millisecond later, so newest-first never ties.
   */
  async addUpdate(db: Queryable, incidentId: string, status: StatusIncident['status'], message: string, now: number): Promise<void> {
    // One statement: an update is never stored without the incident's status moving with it.
    await db.query(
      `WITH u AS (
         INSERT INTO status_incident_updates (id, incident_id, status, message, created_at)
         SELECT $1, $2, $3, $4, GREATEST($5::timestamptz, max(created_at) + interval '1 millisecond')
           FROM status_incident_updates WHERE incident_id = $2
         RETURNING incident_id
       )
       UPDATE status_incidents s SET status = $3, resolved_at = CASE WHEN $3::text = 'resolved' THEN COALESCE(resolved_at, $5) ELSE NULL END
         FROM u WHERE s.id = u.incident_id`,
      [newId('upd_'), incidentId, status, message, new Date(now)],
    );
  },

  async countUpcomingMaintenance(db: Queryable, projectId: string, now: number): Promise<number> {
    const r = await db.query<{ n: string }>('SELECT count(*) AS n FROM status_maintenance WHERE project_id = $1 AND cancelled_at IS NULL AND ends_at > $2', [
      projectId,
      new Date(now),
    ]);
    return Number(r.rows[0]!.n);
  },
  async createMaintenance(
    db: Queryable,
    projectId: string,
    v: { title: string; message: string; monitorIds: string[]; startsAt: number; endsAt: number },
    now: number,
  ): Promise<MaintenanceRow> {
    const r = await db.query<MaintenanceRow>(
      `INSERT INTO status_maintenance (id, project_id, title, message, monitor_ids, starts_at, ends_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       RETURNING *`,
      [newId('mnt_'), projectId, v.title, v.message, v.monitorIds, new Date(v.startsAt), new Date(v.endsAt), new Date(now)],
    );
    return r.rows[0]!;
  },
  async maintenanceById(db: Queryable, projectId: string, id: string): Promise<MaintenanceRow | undefined> {
    return (await db.query<MaintenanceRow>('SELECT * FROM status_maintenance WHERE project_id = $1 AND id = $2', [projectId, id])).rows[0];
  },
  /** Windows not cancelled that end after `endedSince` (all of them without it), upcoming and in progress first. */
  async maintenance(db: Queryable, projectId: string, opts: { endedSince?: Date; withCancelled: boolean; limit: number }): Promise<MaintenanceRow[]> {
    const r = await db.query<MaintenanceRow>(
      `SELECT * FROM status_maintenance WHERE project_id = $1 AND ($2::timestamptz IS NULL OR ends_at >= $2) AND ($3 OR cancelled_at IS NULL)
       ORDER BY starts_at DESC, id LIMIT $4`,
      [projectId, opts.endedSince ?? null, opts.withCancelled, opts.limit],
    );
    return r.rows;
  },
  /**
   * New values of a window. A change of times clears its event marks that no longer hold (a window moved later has
   * not started; one made longer has not ended), so the sweep announces them again.
   */
  async changeMaintenance(
    db: Queryable,
    id: string,
    v: { title: string; message: string; monitorIds: string[]; startsAt: number; endsAt: number },
    now: number,
  ) {
    const r = await db.query<MaintenanceRow>(
      `UPDATE status_maintenance SET title = $2, message = $3, monitor_ids = $4, starts_at = $5, ends_at = $6,
         started_event_at = CASE WHEN $5::timestamptz > $7::timestamptz THEN NULL ELSE started_event_at END,
         ended_event_at = CASE WHEN $6::timestamptz > $7::timestamptz THEN NULL ELSE ended_event_at END
       WHERE id = $1 RETURNING *`,
      [id, v.title, v.message, v.monitorIds, new Date(v.startsAt), new Date(v.endsAt), new Date(now)],
    );
    return r.rows[0];
  },
  /** Cancelled now (once): undefined when it was already. */
  async cancelMaintenance(db: Queryable, id: string, now: number): Promise<MaintenanceRow | undefined> {
    const r = await db.query<MaintenanceRow>('UPDATE status_maintenance SET cancelled_at = $2 WHERE id = $1 AND cancelled_at IS NULL RETURNING *', [
      id,
      new Date(now),
    ]);
    return r.rows[0];
  },
  /** The in-progress windows of a project and the monitors they cover (the status JSON's `maintenance` states). */
  async inProgress(db: Queryable, projectId: string, now: number): Promise<MaintenanceRow[]> {
    const r = await db.query<MaintenanceRow>(
      'SELECT * FROM status_maintenance WHERE project_id = $1 AND cancelled_at IS NULL AND starts_at <= $2 AND ends_at > $2',
      [projectId, new Date(now)],
    );
    return r.rows;
  },
};
