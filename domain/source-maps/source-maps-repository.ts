import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';

/**
 * Kept source maps (source_maps, migration 0026): a deploy's, collected by the builder, and a project's uploads. The
 * builder and the upload routes write them, the processor finds and reads them, the deploy page lists them, the sweeps
 * delete them. Content goes in and out as bytes; it is never shown.
 */
export interface NewSourceMap {
  /** The map's path in the build output or the bundle (`assets/index-3f9a2c1b.js.map`). */
  mapName: string;
  /** The path a site serves the mapped file at (`/assets/index-3f9a2c1b.js`), when known. */
  servedPath?: string;
  debugId?: string;
  content: Buffer;
}

/** A kept map as the processor chooses among them (no content). */
export interface SourceMapRef {
  id: string;
  projectId: string;
  deployId: string | null;
  bundleId: string | null;
  servedPath: string | null;
  debugId: string | null;
  mapName: string;
  size: number;
  createdAt: number;
  /** The commit its deploy built (an event's `gitSha`, a Sentry `release` that is a sha, names it). */
  gitSha: string | null;
}

/** One map as the deploy page lists it. */
export interface ListedSourceMap {
  mapName: string;
  servedPath: string | null;
  debugId: string | null;
  size: number;
}

type RefRow = {
  id: string;
  project_id: string;
  deploy_id: string | null;
  bundle_id: string | null;
  served_path: string | null;
  debug_id: string | null;
  map_name: string;
  size: number;
  created_at: Date | string;
  git_sha: string | null;
};
const REF_COLUMNS = 's.id, s.project_id, s.deploy_id, s.bundle_id, s.served_path, s.debug_id, s.map_name, s.size, s.created_at, d.git_sha';
const refOf = (r: RefRow): SourceMapRef => ({
  id: r.id,
  projectId: r.project_id,
  deployId: r.deploy_id,
  bundleId: r.bundle_id,
  servedPath: r.served_path,
  debugId: r.debug_id,
  mapName: r.map_name,
  size: Number(r.size),
  createdAt: new Date(r.created_at).getTime(),
  gitSha: r.git_sha,
});

export const sourceMapsRepository = {
  /** Store maps of one deploy or one upload's bundle (one statement per map: a map is up to megabytes). */
  async insert(tx: Queryable, owner: { projectId: string; deployId?: string; bundleId?: string }, maps: NewSourceMap[]): Promise<void> {
    for (const m of maps) {
      await tx.query(
        `INSERT INTO source_maps (id, project_id, deploy_id, bundle_id, served_path, debug_id, map_name, size, content)
         VALUES ($1, $2, $3, $4, $5, $6::uuid, $7, $8, $9)`,
        [
          newId('smap_'),
          owner.projectId,
          owner.deployId ?? null,
          owner.bundleId ?? null,
          m.servedPath ?? null,
          m.debugId ?? null,
          m.mapName,
          m.content.length,
          m.content,
        ],
      );
    }
  },

  /**
   * Every kept map of these projects that maps one of `servedPaths` or carries one of `debugIds`, newest first. One
   * query for a whole batch of events.
   */
  async candidates(db: Queryable, projectIds: string[], servedPaths: string[], debugIds: string[]): Promise<SourceMapRef[]> {
    if (!projectIds.length || (!servedPaths.length && !debugIds.length)) return [];
    const r = await db.query<RefRow>(
      `SELECT ${REF_COLUMNS} FROM source_maps s LEFT JOIN deploys d ON d.id = s.deploy_id
        WHERE s.project_id = ANY($1::text[]) AND (s.served_path = ANY($2::text[]) OR s.debug_id = ANY($3::uuid[]))
        ORDER BY s.created_at DESC, s.id DESC LIMIT 2000`,
      [projectIds, servedPaths, debugIds],
    );
    return r.rows.map(refOf);
  },

  /** Each project's live deploy (a production host's and custom domain's frames were served by it). */
  async liveDeploys(db: Queryable, projectIds: string[]): Promise<Map<string, string | null>> {
    const r = await db.query<{ id: string; live_deploy_id: string | null }>('SELECT id, live_deploy_id FROM projects WHERE id = ANY($1::text[])', [projectIds]);
    return new Map(r.rows.map((row) => [row.id, row.live_deploy_id]));
  },

  /** The content of these maps, by id. */
  async contents(db: Queryable, ids: string[]): Promise<Map<string, Buffer>> {
    if (!ids.length) return new Map();
    const r = await db.query<{ id: string; content: Uint8Array }>('SELECT id, content FROM source_maps WHERE id = ANY($1::text[])', [ids]);
    return new Map(r.rows.map((row) => [row.id, Buffer.isBuffer(row.content) ? row.content : Buffer.from(row.content)]));
  },

  /** A deploy's maps for its page: names, sizes, served paths, debug ids; never content. */
  async listForDeploy(db: Queryable, deployId: string): Promise<ListedSourceMap[]> {
    const r = await db.query<{ map_name: string; served_path: string | null; debug_id: string | null; size: number }>(
      'SELECT map_name, served_path, debug_id, size FROM source_maps WHERE deploy_id = $1 ORDER BY map_name',
      [deployId],
    );
    return r.rows.map((row) => ({ mapName: row.map_name, servedPath: row.served_path, debugId: row.debug_id, size: Number(row.size) }));
  },

  /** Forget the maps of deploys whose artifacts were swept. */
  async deleteForDeploys(db: Queryable, deployIds: string[]): Promise<void> {
    if (deployIds.length) await db.query('DELETE FROM source_maps WHERE deploy_id = ANY($1::text[])', [deployIds]);
  },

  /**
   * An upload's bundle stored once per project: one assembly of a bundle per project at a time (a concurrent poll
   * waits, then finds it stored).
   */
  async insertBundleOnce(db: RelationalStore, projectId: string, bundleId: string, maps: NewSourceMap[]): Promise<void> {
    await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`source-map-bundle:${projectId}:${bundleId}`]);
      if (!(await sourceMapsRepository.hasBundle(tx, projectId, bundleId))) await sourceMapsRepository.insert(tx, { projectId, bundleId }, maps);
    });
  },

  /** Whether a project already holds an upload's bundle (sentry-cli assembles one bundle once). */
  async hasBundle(db: Queryable, projectId: string, bundleId: string): Promise<boolean> {
    const r = await db.query('SELECT 1 FROM source_maps WHERE project_id = $1 AND bundle_id = $2 LIMIT 1', [projectId, bundleId]);
    return r.rows.length > 0;
  },

  /**
   * A project's uploads past `maxBytes` in all: whole bundles go, oldest first, until the rest fit. Returns the bundles
   * deleted.
   */
  async sweepUploads(db: Queryable, projectId: string, maxBytes: number): Promise<string[]> {
    const r = await db.query<{ bundle_id: string }>(
      `WITH bundles AS (
         SELECT bundle_id, sum(size) AS bytes, max(created_at) AS at FROM source_maps
          WHERE project_id = $1 AND deploy_id IS NULL AND bundle_id IS NOT NULL GROUP BY bundle_id),
       ranked AS (SELECT bundle_id, sum(bytes) OVER (ORDER BY at DESC, bundle_id DESC) AS running FROM bundles)
       DELETE FROM source_maps s USING ranked
        WHERE s.project_id = $1 AND s.deploy_id IS NULL AND s.bundle_id = ranked.bundle_id AND ranked.running > $2
       RETURNING s.bundle_id`,
      [projectId, maxBytes],
    );
    return [...new Set(r.rows.map((row) => row.bundle_id))];
  },
};
