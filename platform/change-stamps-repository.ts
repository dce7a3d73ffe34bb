import type { Queryable } from './ports/relational-store.ts';

/**
 * A change stamp (migrations 0048, 0049): a number in `change_stamps` that triggers move with every committed change
 * to what its reader caches, so the reader asks for the number instead of everything. Null if the row is gone.
 */
export const changeStampsRepository = {
  async read(db: Queryable, name: 'edge' | 'uptime'): Promise<string | null> {
    const r = await db.query<{ stamp: string | number }>('SELECT stamp FROM change_stamps WHERE name = $1', [name]);
    return r.rows[0] ? String(r.rows[0].stamp) : null;
  },
};
