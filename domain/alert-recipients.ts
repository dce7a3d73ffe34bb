import type { Queryable } from '../platform/ports/relational-store.ts';

/**
 * The project's alert recipients; when the list is empty, the project owner (so a fresh project
 * still hears about production errors).
 */
export async function alertRecipients(db: Queryable, projectId: string): Promise<string[]> {
  const r = await db.query<{ email: string }>('SELECT email FROM project_alert_recipients WHERE project_id = $1 ORDER BY email', [projectId]);
  if (r.rows.length) return r.rows.map((x) => x.email);
  const owner = await db.query<{ email: string }>('SELECT u.email FROM projects p JOIN users u ON u.id = p.owner_id WHERE p.id = $1', [projectId]);
  return owner.rows.map((x) => x.email);
}
