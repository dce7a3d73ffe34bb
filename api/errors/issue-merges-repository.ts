import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { MergedFrom } from '../../schemas/api/errors.ts';
import { mergeLockKey } from '../../domain/issue-merges/merge-lock.ts';

/**
 * Merged issues (issue 41, migration 0038): Sentry's merge. The target keeps its row, fingerprint, status and samples;
 * each merged issue's counts, environment counts, first/last seen (and the deploys named by them) widen the target, its
 * kept samples are dropped (its occurrences stay in ClickHouse, read through the target), its row goes and a redirect
 * (error_group_merges) takes its place: the processor sends later events of its fingerprint to the target, and GET of
 * its id answers the target.
 */
interface LockedGroup {
  id: string;
  fingerprint: string;
}

export const issueMergesRepository = {
  /**
   * Merge `others` into `targetId`, in one transaction:
   *  1. the project's merge lock, exclusive: a batch in flight (which holds it shared from its redirect read to its
   *     commit) finishes first, and a batch after this one reads the new redirects (processor/errors/error-pipeline.ts)
   *  2. lock the issues in id order (the processor's order); the target and every other one must be this project's
   *  3. widen the target by the others' counts, environments, first/last seen and deploys
   *  4. redirects: the others' own redirects move to the target (no chains), then one per other issue
   *  5. delete the others (their samples and ignore-until users go with them)
   * Answers the merged ids with their fingerprints.
   */
  async merge(db: RelationalStore, projectId: string, targetId: string, others: string[], now: number): Promise<MergedFrom[]> {
    const ids = [...new Set(others)];
    if (ids.includes(targetId))
      throw new ServiceError('invalid_request', 'an issue cannot be merged into itself', {
        fields: [{ path: 'body.groupIds', message: 'holds the target issue' }],
      });
    return db.transaction(async (tx) => {
      // 1. lock
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [mergeLockKey(projectId)]);
      // 2. the issues, locked
      const all = [targetId, ...ids].sort();
      const locked = await tx.query<LockedGroup>(
        'SELECT id, fingerprint FROM error_groups WHERE project_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE',
        [projectId, all],
      );
      const found = new Map(locked.rows.map((r) => [r.id, r]));
      if (!found.has(targetId)) throw new ServiceError('not_found', 'no such issue in this project');
      const missing = ids.filter((id) => !found.has(id));
      if (missing.length) throw new ServiceError('not_found', `no such issue in this project: ${missing.slice(0, 5).join(', ')}`);
      // 3. widen the target
      await tx.query(
        `WITH o AS (SELECT * FROM error_groups WHERE project_id = $1 AND id = ANY($3::text[])),
              envs AS (SELECT key, sum(value::bigint) AS n FROM (SELECT e.key, e.value FROM error_groups t, jsonb_each_text(t.env_counts) e WHERE t.id = $2
                                                              UNION ALL SELECT e.key, e.value FROM o, jsonb_each_text(o.env_counts) e) x GROUP BY key),
              earliest AS (SELECT first_seen, first_deploy_id FROM o ORDER BY first_seen ASC LIMIT 1),
              latest AS (SELECT last_seen, last_deploy_id FROM o ORDER BY last_seen DESC LIMIT 1)
         UPDATE error_groups g SET
                count = g.count + (SELECT sum(count) FROM o),
                env_counts = COALESCE((SELECT jsonb_object_agg(key, n) FROM envs), '{}'::jsonb),
                first_seen = LEAST(g.first_seen, (SELECT first_seen FROM earliest)),
                last_seen = GREATEST(g.last_seen, (SELECT last_seen FROM latest)),
                first_deploy_id = CASE WHEN (SELECT first_seen FROM earliest) < g.first_seen OR g.first_deploy_id IS NULL
                                       THEN COALESCE((SELECT first_deploy_id FROM earliest), g.first_deploy_id) ELSE g.first_deploy_id END,
                last_deploy_id = CASE WHEN (SELECT last_seen FROM latest) > g.last_seen OR g.last_deploy_id IS NULL
                                      THEN COALESCE((SELECT last_deploy_id FROM latest), g.last_deploy_id) ELSE g.last_deploy_id END,
                culprit = COALESCE(g.culprit, (SELECT culprit FROM o WHERE culprit IS NOT NULL ORDER BY id LIMIT 1)),
                suggestion = COALESCE(g.suggestion, (SELECT suggestion FROM o WHERE suggestion IS NOT NULL ORDER BY id LIMIT 1))
          WHERE g.id = $2`,
        [projectId, targetId, ids],
      );
      // 4. redirects: the others' first (they point at rows about to go), then the others themselves
      const at = new Date(now).toISOString();
      await tx.query('UPDATE error_group_merges SET merged_into = $2 WHERE project_id = $1 AND merged_into = ANY($3::text[])', [projectId, targetId, ids]);
      await tx.query(
        `INSERT INTO error_group_merges (group_id, project_id, fingerprint, merged_into, merged_at)
         SELECT id, project_id, fingerprint, $2, $4 FROM error_groups WHERE project_id = $1 AND id = ANY($3::text[])`,
        [projectId, targetId, ids, at],
      );
      // 5. the others go
      await tx.query('DELETE FROM error_groups WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, ids]);
      return ids.map((id) => ({ groupId: id, fingerprint: found.get(id)!.fingerprint, mergedAt: at }));
    });
  },

  /** The issue a merged id now lives in, if it was merged. */
  async redirectOf(db: Queryable, projectId: string, groupId: string): Promise<string | undefined> {
    const r = await db.query<{ merged_into: string }>('SELECT merged_into FROM error_group_merges WHERE project_id = $1 AND group_id = $2', [
      projectId,
      groupId,
    ]);
    return r.rows[0]?.merged_into;
  },

  /** What an issue merged, oldest merge first (a merged issue's own merges included: they moved with it). */
  async mergedFrom(db: Queryable, projectId: string, groupId: string): Promise<MergedFrom[]> {
    const r = await db.query<{ group_id: string; fingerprint: string; merged_at: Date | string }>(
      'SELECT group_id, fingerprint, merged_at FROM error_group_merges WHERE project_id = $1 AND merged_into = $2 ORDER BY merged_at, group_id',
      [projectId, groupId],
    );
    return r.rows.map((m) => ({ groupId: m.group_id, fingerprint: m.fingerprint, mergedAt: new Date(m.merged_at).toISOString() }));
  },

  /** Every group id whose occurrences are this issue's: its own and the ids merged into it (ClickHouse keeps the old ids). */
  async occurrenceGroupIds(db: Queryable, projectId: string, groupId: string): Promise<string[]> {
    return [groupId, ...(await issueMergesRepository.mergedFrom(db, projectId, groupId)).map((m) => m.groupId)];
  },

  /** The targets of the merged ones among `groupIds` (the tag filter's ids, read from occurrences under their old ids). */
  async targetsOf(db: Queryable, projectId: string, groupIds: string[]): Promise<string[]> {
    if (!groupIds.length) return [];
    const r = await db.query<{ merged_into: string }>(
      'SELECT DISTINCT merged_into FROM error_group_merges WHERE project_id = $1 AND group_id = ANY($2::text[])',
      [projectId, groupIds],
    );
    return r.rows.map((x) => x.merged_into);
  },
};
