import type { Queryable } from '../../platform/ports/relational-store.ts';

/**
 * Source map uploads' SQL: chunks in flight (source_map_chunks, migration 0027), each owned by whoever sent it (a project
 * for a `cx_live_` key, a user for a `cx_cli_` token) and named by the SHA-1 of its bytes, checked before it is stored;
 * and the projects an upload may name.
 */
export interface Chunk {
  checksum: string;
  content: Buffer;
}

export interface UploadProject {
  id: string;
  slug: string;
  /** The DSN's project number, as text. */
  number: string;
}
type ProjectRow = { id: string; slug: string; number: string | number };

export const uploadsRepository = {
  /** Store chunks (a chunk sent again is kept once, its age renewed). */
  async putChunks(db: Queryable, ownerId: string, chunks: Chunk[], now: number): Promise<void> {
    for (const c of chunks) {
      await db.query(
        `INSERT INTO source_map_chunks (owner_id, checksum, size, content, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (owner_id, checksum) DO UPDATE SET created_at = excluded.created_at`,
        [ownerId, c.checksum, c.content.length, c.content, new Date(now)],
      );
    }
  },

  /** Which of `checksums` the owner holds. */
  async presentChunks(db: Queryable, ownerId: string, checksums: string[]): Promise<Set<string>> {
    const r = await db.query<{ checksum: string }>('SELECT checksum FROM source_map_chunks WHERE owner_id = $1 AND checksum = ANY($2::text[])', [
      ownerId,
      checksums,
    ]);
    return new Set(r.rows.map((row) => row.checksum));
  },

  /** The owner's chunks among `checksums`, with their bytes. */
  async readChunks(db: Queryable, ownerId: string, checksums: string[]): Promise<Map<string, Buffer>> {
    const r = await db.query<{ checksum: string; content: Uint8Array }>(
      'SELECT checksum, content FROM source_map_chunks WHERE owner_id = $1 AND checksum = ANY($2::text[])',
      [ownerId, checksums],
    );
    return new Map(r.rows.map((row) => [row.checksum, Buffer.isBuffer(row.content) ? row.content : Buffer.from(row.content)]));
  },

  /** Forget chunks once their bundle was assembled (or refused). */
  async deleteChunks(db: Queryable, ownerId: string, checksums: string[]): Promise<void> {
    await db.query('DELETE FROM source_map_chunks WHERE owner_id = $1 AND checksum = ANY($2::text[])', [ownerId, checksums]);
  },

  /** The owner's oldest chunks past `maxBytes` in all go (an abandoned upload never blocks the next). */
  async trimChunks(db: Queryable, ownerId: string, maxBytes: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM source_map_chunks c USING (
         SELECT checksum, sum(size) OVER (ORDER BY created_at DESC, checksum DESC) AS running
           FROM source_map_chunks WHERE owner_id = $1) ranked
        WHERE c.owner_id = $1 AND c.checksum = ranked.checksum AND ranked.running > $2`,
      [ownerId, maxBytes],
    );
    return r.rowCount;
  },

  /** Every owner's chunks last uploaded before `before` (epoch ms): uploads abandoned. */
  async sweepChunks(db: Queryable, before: number): Promise<number> {
    const r = await db.query('DELETE FROM source_map_chunks WHERE created_at < $1', [new Date(before)]);
    return r.rowCount;
  },

  /**
   * The projects among `wanted` (each a slug, a prj_ id or a DSN project number) that an upload may write: a key's own
   * project, or a project the user is a member of. What is not found is left out; the caller says which.
   */
  async uploadProjects(db: Queryable, who: { projectId: string } | { userId: string }, wanted: string[]): Promise<UploadProject[]> {
    const r =
      'projectId' in who
        ? await db.query<ProjectRow>('SELECT id, slug, number FROM projects WHERE id = $1', [who.projectId])
        : await db.query<ProjectRow>(
            `SELECT p.id, p.slug, p.number FROM projects p JOIN project_members m ON m.project_id = p.id
              WHERE m.user_id = $1 AND (p.slug = ANY($2::text[]) OR p.id = ANY($2::text[]) OR p.number::text = ANY($2::text[]))`,
            [who.userId, wanted],
          );
    return r.rows.map((row) => ({ id: row.id, slug: row.slug, number: String(row.number) }));
  },
};
