import type { Queryable } from '../../platform/ports/relational-store.ts';

export const writtenStatusRepository = {
  /** A project's public monitors, id → name: the only monitors a status page or its events may name (issue 43). */
  async publicMonitorNames(db: Queryable, projectId: string): Promise<Map<string, string>> {
    const r = await db.query<{ id: string; name: string }>('SELECT id, name FROM uptime_monitors WHERE project_id = $1 AND public ORDER BY created_at, id', [
      projectId,
    ]);
    return new Map(r.rows.map((m) => [m.id, m.name]));
  },
};
