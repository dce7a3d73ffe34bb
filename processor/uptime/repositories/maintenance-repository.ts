import type { MaintenanceRow } from '../../../domain/uptime/written-status.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * The monitor role's side of status_maintenance (migration 0045): whether a monitor is under a window in progress
 * (its failures then open no incident), and the windows whose start or end has not been announced.
 */
export type AnnouncedRow = MaintenanceRow & { project_slug: string };

export const maintenanceRepository = {
  /** A window not cancelled covers the monitor at `at` (starts_at ≤ at < ends_at). */
  async underMaintenance(db: Queryable, projectId: string, monitorId: string, at: number): Promise<boolean> {
    const r = await db.query(
      `SELECT 1 FROM status_maintenance WHERE project_id = $1 AND $2 = ANY(monitor_ids) AND cancelled_at IS NULL AND starts_at <= $3 AND ends_at > $3 LIMIT 1`,
      [projectId, monitorId, new Date(at)],
    );
    return r.rows.length > 0;
  },
  /**
   * Windows that started, or ended, by `now` without their event, oldest first. A window only ends once its start
   * went out (a sweep announces a window it missed entirely as started, then completed).
   */
  async unannounced(db: Queryable, edge: 'started' | 'ended', now: number, limit: number): Promise<AnnouncedRow[]> {
    const where =
      edge === 'started'
        ? 'w.started_event_at IS NULL AND w.starts_at <= $1'
        : 'w.ended_event_at IS NULL AND w.ends_at <= $1 AND w.started_event_at IS NOT NULL';
    const r = await db.query<AnnouncedRow>(
      `SELECT w.*, p.slug AS project_slug FROM status_maintenance w JOIN projects p ON p.id = w.project_id
       WHERE w.cancelled_at IS NULL AND ${where} ORDER BY ${edge === 'started' ? 'w.starts_at' : 'w.ends_at'} LIMIT $2`,
      [new Date(now), limit],
    );
    return r.rows;
  },
  /**
   * Its event went out for the window as it was read (`at`: its start, or its end): marked only while that time still
   * holds and it is not cancelled. A window moved or cancelled meanwhile (its marks cleared) is announced at its new time.
   */
  async announced(db: Queryable, id: string, edge: 'started' | 'ended', at: number, now: number): Promise<void> {
    const [mark, time] = edge === 'started' ? ['started_event_at', 'starts_at'] : ['ended_event_at', 'ends_at'];
    await db.query(`UPDATE status_maintenance SET ${mark} = $2 WHERE id = $1 AND ${time} = $3 AND cancelled_at IS NULL`, [id, new Date(now), new Date(at)]);
  },
};
