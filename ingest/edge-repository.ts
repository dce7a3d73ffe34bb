import { changeStampsRepository } from '../platform/change-stamps-repository.ts';
import type { Queryable } from '../platform/ports/relational-store.ts';

/**
 * What the edge reads of the relational store, in the background (project-cache.ts, flag-cache.ts): every tick the
 * change stamp and the month's usage, and whole only when the stamp moved (edge-change-gate.ts); and the one thing it
 * writes: when ingest keys were last used (key-usage.ts). No request waits on any of it.
 */
export interface IngestKeyRow {
  key_id: string;
  token_hash: string;
  project_id: string;
  project_number: string | number;
  production_domains: string[] | null;
  preview_domains: string[] | null;
  paused: boolean | null;
  ingest_origins: string[] | null;
}

export interface ErrorUsageRow {
  project_id: string;
  environment: string;
  accepted: string | number;
}

export interface FlaggedDeployRow {
  project_id: string;
  id: string;
  /** Lower-cased. */
  git_sha: string | null;
  environment: 'production' | 'preview';
}

export const edgeRepository = {
  /**
   * The `edge` change stamp (migration 0048): it moves with every committed change to what ingestKeys, platformHosts,
   * flagDefinitions and flaggedDeploys read. Null if its row is gone.
   */
  changeStamp: (db: Queryable): Promise<string | null> => changeStampsRepository.read(db, 'edge'),

  /** Live ingest keys with their project's settings, oldest key first. */
  async ingestKeys(db: Queryable): Promise<IngestKeyRow[]> {
    const r = await db.query<IngestKeyRow>(
      `SELECT k.id AS key_id, k.token_hash, p.id AS project_id, p.number AS project_number, p.production_domains, p.preview_domains,
              s.paused, s.ingest_origins
         FROM api_keys k
         JOIN projects p ON p.id = k.project_id
         LEFT JOIN error_settings s ON s.project_id = p.id
        WHERE k.kind = 'ingest' AND k.revoked_at IS NULL
        ORDER BY k.created_at, k.id`,
    );
    return r.rows;
  },

  /**
   * A refresh of the project cache at rest, in one statement (issue 44: at rest each statement costs the PGlite thread
   * about a millisecond): the `edge` change stamp (null if its row is gone), the errors accepted in `month` per project
   * and environment, and the projects that accepted at least `quota` analytics events in `month`.
   */
  async stampAndUsage(db: Queryable, month: string, quota: number): Promise<{ stamp: string | null; errorUsage: ErrorUsageRow[]; overQuota: string[] }> {
    const r = await db.query<{ kind: 'stamp' | 'errors' | 'analytics'; project_id: string | null; environment: string | null; value: string }>(
      `SELECT 'stamp' AS kind, NULL::text AS project_id, NULL::text AS environment, stamp::text AS value FROM change_stamps WHERE name = 'edge'
       UNION ALL
       SELECT 'errors', project_id, environment, accepted::text FROM error_monthly_usage WHERE month = $1
       UNION ALL
       SELECT 'analytics', project_id, NULL, accepted::text FROM analytics_monthly_usage WHERE month = $1 AND accepted >= $2`,
      [month, quota],
    );
    let stamp: string | null = null;
    const errorUsage: ErrorUsageRow[] = [];
    const overQuota: string[] = [];
    for (const row of r.rows) {
      if (row.kind === 'stamp') stamp = row.value;
      else if (row.kind === 'errors') errorUsage.push({ project_id: row.project_id!, environment: row.environment!, accepted: row.value });
      else overQuota.push(row.project_id!);
    }
    return { stamp, errorUsage, overQuota };
  },

  /** Every feature flag's stored definition, by project and key. */
  async flagDefinitions(db: Queryable): Promise<Array<{ project_id: string; definition: unknown }>> {
    const r = await db.query<{ project_id: string; definition: unknown }>('SELECT project_id, definition FROM feature_flags ORDER BY project_id, key');
    return r.rows;
  },

  /** The newest `perProject` ready deploys of every project that has flags, oldest first. */
  async flaggedDeploys(db: Queryable, perProject: number): Promise<FlaggedDeployRow[]> {
    const r = await db.query<FlaggedDeployRow>(
      `SELECT project_id, id, lower(git_sha) AS git_sha, environment FROM (
         SELECT d.project_id, d.id, d.git_sha, d.environment, d.created_at,
                row_number() OVER (PARTITION BY d.project_id ORDER BY d.created_at DESC) AS n
           FROM deploys d WHERE d.status = 'ready' AND d.project_id IN (SELECT DISTINCT project_id FROM feature_flags)) x
        WHERE n <= $1 ORDER BY created_at`,
      [perProject],
    );
    return r.rows;
  },

  /** Note that these keys were used at `at` (a key's time only moves forward). */
  async markKeysUsed(db: Queryable, keyIds: string[], at: number): Promise<void> {
    await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = ANY($1::text[]) AND (last_used_at IS NULL OR last_used_at < $2)', [keyIds, new Date(at)]);
  },
};
