import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';

/**
 * Issues (error_groups) and their ring of recent samples (error_group_samples, migration 0006), as the
 * pipeline reads and writes them inside a batch's transaction.
 */

/** A group row as it was before this batch, locked for the rest of the transaction. */
export interface PriorGroup {
  id: string;
  status: string;
  env_counts: Record<string, number>;
  /** Regressions so far: the batch regressed the group when upsert answers a higher count (issue 41: resolving groups reopen in SQL). */
  regression_count: number;
  /** The group has no culprit (no in-app frame so far) or no suggestion yet: the group step fills them. */
  no_culprit: boolean;
  no_suggestion: boolean;
  /** Ignore until (issue 41, 0037): an ignored group's condition; all null when ignored forever (or not ignored). */
  count: number;
  ignore_count: number | null;
  ignore_count_base: number | null;
  ignore_user_count: number | null;
  ignore_until_at: Date | string | null;
}

/** An ignored group whose condition the batch met (issue 41): back to unresolved, with the reason, at the event's time. */
export interface Unignore {
  id: string;
  reason: 'events' | 'users' | 'time';
  at: string;
}

/** One group's share of a batch, folded into its row by the rules of foldInto. */
export interface GroupRow {
  id: string;
  /** The group existed (and is locked): updated by id; otherwise inserted, merging with a concurrent insert. */
  prior: boolean;
  /** Existing groups: the env counts after this batch (summed in the processor). */
  env_totals: Record<string, number> | null;
  project_id: string;
  fingerprint: string;
  name: string;
  message: string;
  stack: string;
  culprit: string | null;
  count: number;
  env_counts: Record<string, number>;
  first_seen: string;
  last_seen: string;
  suggestion: string | null;
  samples: unknown[];
  /** Issue 41: the deploy of the batch's oldest event and of its newest event that has one, and every deploy its events name. */
  first_deploy_id: string | null;
  last_deploy_id: string | null;
  deploy_ids: string[];
}

export interface AlertMailFacts {
  name: string;
  message: string;
  count: string | number;
  culprit: string | null;
  suggestion: string | null;
  env_counts: Record<string, number>;
  slug: string;
  project_name: string;
}

export interface GroupsRepository {
  /** Lock the existing groups among `ids` (in id order) and read what the batch needs of them. */
  lockPrior(tx: Queryable, ids: string[]): Promise<Map<string, PriorGroup>>;
  /** Unresolved groups per project and environment, keyed `${projectId}\0${environment}`. */
  countOpen(tx: Queryable, projectIds: string[]): Promise<Map<string, number>>;
  /** Fold the batch's rows into their groups and write each group's samples into its next ring slot. */
  upsert(tx: Queryable, rows: GroupRow[]): Promise<Map<string, number>>;
  /**
   * Claim alert mail for these groups: at most once per `sinceMs`, never for ignored groups or with alerts off, only in
   * projects that never wrote their alert rules (issue 41: theirs are evaluated by processor/alerts/). Returns the claimed ids.
   */
  claimAlerts(tx: Queryable, ids: string[], now: number, perIssueMs: number): Promise<Set<string>>;
  alertMailFacts(db: Queryable, groupId: string): Promise<AlertMailFacts | undefined>;
  /**
   * An ignored-until-N-users group's distinct user keys since it was ignored, with `keys` added (never more than `max`
   * kept). Returns how many it has.
   */
  noteIgnoredUsers(tx: Queryable, groupId: string, keys: string[], max: number): Promise<number>;
  /** Ignored groups back to unresolved with their reason (only those still ignored); their user keys go. */
  unignore(tx: Queryable, items: Unignore[]): Promise<void>;
}

/** Clearing an ignored group's condition when it comes back (issue 41); the triage sweep uses the same. */
export const UNIGNORE_SET = `status = 'unresolved', ignore_count = NULL, ignore_count_base = NULL, ignore_user_count = NULL, ignore_until_at = NULL,
  ignore_until_escalating = false`;

/**
 * How a batch's row of a group (`src`) folds into the stored row `g`, the same for both write paths
 * (§2.6, §3.1): counts are increments, first/last seen widen, the newest event's name, message and stack
 * win (an unchanged stack keeps its stored, toasted value), culprit and suggestion are kept once set, a
 * resolved group reopens and counts a regression, and the group counts one more sample batch.
 */
function foldInto(src: string, envCounts: string, deployIds: string): string {
  // Reopens: a resolved group, or a group resolving in next deploy (status 'resolving', issue 41) that gets an event of
  // a deploy created after the one live when it was marked (events of that deploy or older ones, or of none, do not).
  // A group resolved by that newer deploy going live (resolved_deploy_id, 0038) keeps the resolving rule.
  const reopens = `((g.status = 'resolved' AND g.resolved_deploy_id IS NULL) OR (g.status IN ('resolving', 'resolved') AND EXISTS (
             SELECT 1 FROM deploys d JOIN deploys m ON m.id = g.resolve_deploy_id
              WHERE d.id = ANY(${deployIds}) AND d.project_id = g.project_id AND (d.created_at, d.id) > (m.created_at, m.id))))`;
  return `
           count = g.count + ${src}.count,
           env_counts = ${envCounts},
           first_seen = LEAST(g.first_seen, ${src}.first_seen),
           last_seen = GREATEST(g.last_seen, ${src}.last_seen),
           name = CASE WHEN ${src}.last_seen >= g.last_seen THEN ${src}.name ELSE g.name END,
           message = CASE WHEN ${src}.last_seen >= g.last_seen THEN ${src}.message ELSE g.message END,
           stack = CASE WHEN ${src}.last_seen >= g.last_seen AND ${src}.stack IS DISTINCT FROM g.stack THEN ${src}.stack ELSE g.stack END,
           culprit = COALESCE(g.culprit, ${src}.culprit),
           suggestion = COALESCE(g.suggestion, ${src}.suggestion),
           status = CASE WHEN ${reopens} THEN 'unresolved' ELSE g.status END,
           regression_count = g.regression_count + CASE WHEN ${reopens} THEN 1 ELSE 0 END,
           first_deploy_id = CASE WHEN g.first_deploy_id IS NULL OR ${src}.first_seen < g.first_seen THEN COALESCE(${src}.first_deploy_id, g.first_deploy_id) ELSE g.first_deploy_id END,
           last_deploy_id = CASE WHEN ${src}.last_seen >= g.last_seen THEN COALESCE(${src}.last_deploy_id, g.last_deploy_id) ELSE g.last_deploy_id END,
           regressed_deploy_id = CASE WHEN ${reopens}
             THEN (SELECT d.id FROM deploys d WHERE d.id = ANY(${deployIds}) AND d.project_id = g.project_id ORDER BY d.created_at DESC, d.id DESC LIMIT 1)
             ELSE g.regressed_deploy_id END,
           resolve_deploy_id = CASE WHEN ${reopens} THEN NULL ELSE g.resolve_deploy_id END,
           resolved_deploy_id = CASE WHEN ${reopens} THEN NULL ELSE g.resolved_deploy_id END,
           sample_batches = g.sample_batches + 1`;
}
/** A group locked by lockPrior: its env counts were summed in the processor (x.env_totals). */
const FOLD_BY_ID = foldInto('x', 'x.env_totals', 'x.deploy_ids');
/** A group another processor created meanwhile: the env counts merge here. */
const FOLD_ON_CONFLICT = foldInto(
  'EXCLUDED',
  `g.env_counts || (SELECT jsonb_object_agg(key, value::bigint + COALESCE((g.env_counts ->> key)::bigint, 0))
                                           FROM jsonb_each_text(EXCLUDED.env_counts))`,
  `ARRAY(SELECT v FROM unnest(ARRAY[EXCLUDED.first_deploy_id, EXCLUDED.last_deploy_id]) AS v WHERE v IS NOT NULL)`,
);
/** The ring's length; error_groups_with_samples (migration 0006) reads the same number back. */
const RING = LIMITS.groupSamples;

export const groupsRepository: GroupsRepository = {
  async lockPrior(tx, ids) {
    if (!ids.length) return new Map();
    const r = await tx.query<PriorGroup>(
      `SELECT id, status, env_counts, regression_count::int AS regression_count, culprit IS NULL AS no_culprit, suggestion IS NULL AS no_suggestion,
              count::float8 AS count, ignore_count::float8 AS ignore_count, ignore_count_base::float8 AS ignore_count_base, ignore_user_count, ignore_until_at
         FROM error_groups WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE`,
      [[...ids].sort()],
    );
    return new Map(r.rows.map((g) => [g.id, g]));
  },

  async countOpen(tx, projectIds) {
    const out = new Map<string, number>();
    if (!projectIds.length) return out;
    const open = await tx.query<{ project_id: string; environment: string; n: string | number }>(
      `SELECT g.project_id, k.env AS environment, count(*) AS n
         FROM error_groups g CROSS JOIN LATERAL jsonb_object_keys(g.env_counts) AS k(env)
        WHERE g.project_id = ANY($1::text[]) AND g.status = 'unresolved'
        GROUP BY g.project_id, k.env`,
      [projectIds],
    );
    for (const r of open.rows) out.set(`${r.project_id}\u0000${r.environment}`, Number(r.n));
    return out;
  },

  async upsert(tx, rows) {
    if (!rows.length) return new Map();
    // One statement: update the locked groups (a plain UPDATE by id, their env counts summed in the
    // processor), insert the new ones (merging with a group another processor created meanwhile), then
    // write the batch's samples of each group into its slot, sample_batches mod RING, replacing what that
    // slot held. Both paths fold the batch in by the same rules (foldInto).
    const updated = await tx.query<{ id: string; regression_count: number }>(
      `WITH x AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, prior boolean, project_id text, fingerprint text, name text, message text, stack text,
                culprit text, count bigint, env_counts jsonb, env_totals jsonb, first_seen timestamptz, last_seen timestamptz, suggestion text, samples jsonb,
                first_deploy_id text, last_deploy_id text, deploy_ids text[])
       ), upd AS (
         UPDATE error_groups g SET ${FOLD_BY_ID}
           FROM x
          WHERE x.prior AND g.id = x.id
         RETURNING g.id, g.sample_batches, g.regression_count
       ), ins AS (
         INSERT INTO error_groups AS g (id, project_id, fingerprint, name, message, stack, culprit, status, count, env_counts,
                                        first_seen, last_seen, regression_count, suggestion, sample_batches, first_deploy_id, last_deploy_id)
         SELECT x.id, x.project_id, x.fingerprint, x.name, x.message, x.stack, x.culprit, 'unresolved', x.count, x.env_counts,
                x.first_seen, x.last_seen, 0, x.suggestion, 1, x.first_deploy_id, x.last_deploy_id
           FROM x
          WHERE NOT x.prior
         ON CONFLICT (project_id, fingerprint) DO UPDATE SET ${FOLD_ON_CONFLICT}
         RETURNING g.id, g.sample_batches
       ), up AS (
         SELECT id, sample_batches FROM upd UNION ALL SELECT id, sample_batches FROM ins
       ), smp AS (
         INSERT INTO error_group_samples AS s (group_id, slot, seq, samples)
         SELECT up.id, up.sample_batches % ${Number(RING)}, up.sample_batches, x.samples FROM up JOIN x ON x.id = up.id
         ON CONFLICT (group_id, slot) DO UPDATE SET seq = EXCLUDED.seq, samples = EXCLUDED.samples
         RETURNING 1
       )
       SELECT id, regression_count::int AS regression_count FROM upd`,
      [JSON.stringify(rows)],
    );
    // A slot just filled with a whole ring's worth holds the newest samples by itself: the group's older
    // slots can go (a hot group keeps RING samples stored, not many rings' worth).
    const full = rows.filter((r) => r.samples.length >= RING).map((r) => r.id);
    if (full.length) {
      await tx.query(`DELETE FROM error_group_samples s USING error_groups g WHERE g.id = ANY($1::text[]) AND s.group_id = g.id AND s.seq < g.sample_batches`, [
        full,
      ]);
    }
    return new Map(updated.rows.map((r) => [r.id, Number(r.regression_count)]));
  },

  async claimAlerts(tx, ids, now, perIssueMs) {
    if (!ids.length) return new Set();
    const claimed = await tx.query<{ id: string }>(
      `UPDATE error_groups g SET last_alert_at = $2
        WHERE g.id = ANY($1::text[]) AND g.status <> 'ignored'
          AND (g.last_alert_at IS NULL OR g.last_alert_at <= $3)
          AND COALESCE((SELECT s.alerts_enabled FROM error_settings s WHERE s.project_id = g.project_id), true)
          AND NOT EXISTS (SELECT 1 FROM alert_rule_sets r WHERE r.project_id = g.project_id)
        RETURNING g.id`,
      [ids, new Date(now).toISOString(), new Date(now - perIssueMs).toISOString()],
    );
    return new Set(claimed.rows.map((r) => r.id));
  },

  async noteIgnoredUsers(tx, groupId, keys, max) {
    // The group is locked (lockPrior): no other batch adds keys meanwhile, so the LIMIT keeps at most `max`.
    const r = await tx.query<{ n: number }>(
      `WITH cur AS (SELECT count(*)::int AS n FROM error_group_ignore_users WHERE group_id = $1),
            ins AS (INSERT INTO error_group_ignore_users (group_id, user_key)
                    SELECT $1, k FROM unnest($2::text[]) AS k
                     WHERE NOT EXISTS (SELECT 1 FROM error_group_ignore_users u WHERE u.group_id = $1 AND u.user_key = k)
                     LIMIT GREATEST(0, $3::int - (SELECT n FROM cur))
                    ON CONFLICT DO NOTHING RETURNING 1)
       SELECT (SELECT n FROM cur) + (SELECT count(*)::int FROM ins) AS n`,
      [groupId, [...new Set(keys)], max],
    );
    return Number(r.rows[0]?.n ?? 0);
  },

  async unignore(tx, items) {
    if (!items.length) return;
    await tx.query(
      `UPDATE error_groups g SET ${UNIGNORE_SET}, unignored_reason = x.reason, unignored_at = x.at
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, reason text, at timestamptz)
        WHERE g.id = x.id AND g.status = 'ignored'`,
      [JSON.stringify(items)],
    );
    await tx.query('DELETE FROM error_group_ignore_users WHERE group_id = ANY($1::text[])', [items.map((i) => i.id)]);
  },

  async alertMailFacts(db, groupId) {
    const g = await db.query<AlertMailFacts>(
      `SELECT g.name, g.message, g.count, g.culprit, g.suggestion, g.env_counts, p.slug, p.name AS project_name
         FROM error_groups g JOIN projects p ON p.id = g.project_id WHERE g.id = $1`,
      [groupId],
    );
    return g.rows[0];
  },
};
