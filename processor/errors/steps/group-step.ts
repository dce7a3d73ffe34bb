import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { formatFrame } from '../stack-parser.ts';
import { suggestFirstCheck } from '../suggestion.ts';
import type { StampedEvent } from './outcome.ts';
import { isoTime } from './time-text.ts';
import type { PriorGroup } from './caps-step.ts';

/**
 * Groups (spec §2.6, §3.1) in Postgres: one statement for every group the batch touches, inside the
 * batch transaction (an update by id for the groups the caps step locked, an insert for new ones).
 * Counts are increments (`count = count + n`), so concurrent processors stay exact. A resolved group that gets an occurrence is unresolved again and counts one regression;
 * an ignored group keeps counting and stays ignored; a new group starts unresolved.
 */
export interface GroupChange {
  groupId: string;
  projectId: string;
  /** The group did not exist before this batch. */
  created: boolean;
  /** It was resolved and this batch reopened it. */
  regressed: boolean;
  /** The batch holds a production occurrence, and production had none before (or it is new). */
  firstInProduction: boolean;
  hasProduction: boolean;
}

/** A kept sample: already scrubbed. */
export function sampleOf(e: StampedEvent) {
  const ev = e.event;
  return {
    eventId: ev.eventId,
    receivedAt: isoTime(e.receivedAt),
    clientTime: ev.clientTime !== undefined ? isoTime(ev.clientTime) : undefined,
    environment: e.environment,
    name: ev.name,
    message: ev.message,
    path: ev.path,
    runtime: ev.runtime,
    userId: ev.userId,
    distinctId: ev.distinctId,
    sessionId: ev.sessionId,
    deployId: ev.deployId,
    gitSha: ev.gitSha,
    originHost: e.originHost ?? undefined,
    extra: ev.extra,
    truncated: ev.truncated.length ? ev.truncated : undefined,
  };
}

/**
 * How a batch's row of a group (`src`) folds into the stored row `g`, the same for both write paths
 * (§2.6, §3.1): counts are increments, first/last seen widen, the newest event's name, message and stack
 * win (an unchanged stack keeps its stored, toasted value), culprit and suggestion are kept once set, a
 * resolved group reopens and counts a regression, and the group counts one more sample batch.
 */
function foldInto(src: string, envCounts: string): string {
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
           status = CASE WHEN g.status = 'resolved' THEN 'unresolved' ELSE g.status END,
           regression_count = g.regression_count + CASE WHEN g.status = 'resolved' THEN 1 ELSE 0 END,
           sample_batches = g.sample_batches + 1`;
}
/** A group the caps step locked: its env counts were summed in the processor (x.env_totals). */
const FOLD_BY_ID = foldInto('x', 'x.env_totals');
/** A group another processor created meanwhile: the env counts merge here. */
const FOLD_ON_CONFLICT = foldInto(
  'EXCLUDED',
  `g.env_counts || (SELECT jsonb_object_agg(key, value::bigint + COALESCE((g.env_counts ->> key)::bigint, 0))
                                           FROM jsonb_each_text(EXCLUDED.env_counts))`,
);

export function createGroupStep() {
  // The ring's length; error_groups_with_samples (migration 0006) reads the same number back.
  const ring = LIMITS.groupSamples;
  /** `prior`: the batch's existing groups as the caps step locked and read them (capsStep's priorGroups). */
  return async function groupStep(tx: Queryable, accepted: StampedEvent[], prior: Map<string, PriorGroup>): Promise<GroupChange[]> {
    if (!accepted.length) return [];
    const byGroup = new Map<string, StampedEvent[]>();
    for (const e of accepted) {
      const list = byGroup.get(e.groupId) ?? [];
      list.push(e);
      byGroup.set(e.groupId, list);
    }
    const ids = [...byGroup.keys()].sort();

    const rows = ids.map((id) => {
      // Newest first: later receive time, then later position in the batch.
      const events = byGroup.get(id)!.map((e, i) => ({ e, i })).sort((a, b) => b.e.receivedAt - a.e.receivedAt || b.i - a.i).map((x) => x.e);
      const newest = events[0]!;
      const envCounts: Record<string, number> = {};
      for (const e of events) envCounts[e.environment] = (envCounts[e.environment] ?? 0) + 1;
      let firstSeen = newest.receivedAt;
      let lastSeen = newest.receivedAt;
      for (const e of events) {
        if (e.receivedAt < firstSeen) firstSeen = e.receivedAt;
        if (e.receivedAt > lastSeen) lastSeen = e.receivedAt;
      }
      // An existing group keeps its culprit and suggestion (COALESCE below): worked out only when it has none.
      const p = prior.get(id);
      // An existing group was read and locked by the caps step in this transaction, so its new env counts
      // are known here; a new group's are merged in SQL (another processor may create it first).
      const envTotals: Record<string, number> = p ? { ...p.env_counts } : {};
      if (p) for (const [env, n] of Object.entries(envCounts)) envTotals[env] = Number(envTotals[env] ?? 0) + n;
      return {
        id,
        prior: !!p,
        env_totals: p ? envTotals : null,
        project_id: newest.projectId,
        fingerprint: newest.fingerprint,
        name: newest.event.name,
        message: newest.event.message,
        stack: newest.event.stack,
        culprit: newest.inAppFrame && (!p || p.no_culprit) ? formatFrame(newest.inAppFrame) : null,
        count: events.length,
        env_counts: envCounts,
        first_seen: isoTime(firstSeen),
        last_seen: isoTime(lastSeen),
        suggestion: !p || p.no_suggestion ? suggestFirstCheck(newest.event.name, newest.event.message, newest.inAppFrame) : null,
        samples: events.slice(0, ring).map(sampleOf),
      };
    });

    // One statement: update the groups the caps step locked (a plain UPDATE by id, their env counts
    // summed here), insert the new ones (merging with a group another processor created meanwhile),
    // then write the batch's samples of each group into its slot, sample_batches mod ring (migration
    // 0006), replacing what that slot held. Both paths fold the batch in by the same rules (foldInto).
    await tx.query(
      `WITH x AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, prior boolean, project_id text, fingerprint text, name text, message text, stack text,
                culprit text, count bigint, env_counts jsonb, env_totals jsonb, first_seen timestamptz, last_seen timestamptz, suggestion text, samples jsonb)
       ), upd AS (
         UPDATE error_groups g SET ${FOLD_BY_ID}
           FROM x
          WHERE x.prior AND g.id = x.id
         RETURNING g.id, g.sample_batches
       ), ins AS (
         INSERT INTO error_groups AS g (id, project_id, fingerprint, name, message, stack, culprit, status, count, env_counts,
                                        first_seen, last_seen, regression_count, suggestion, sample_batches)
         SELECT x.id, x.project_id, x.fingerprint, x.name, x.message, x.stack, x.culprit, 'unresolved', x.count, x.env_counts,
                x.first_seen, x.last_seen, 0, x.suggestion, 1
           FROM x
          WHERE NOT x.prior
         ON CONFLICT (project_id, fingerprint) DO UPDATE SET ${FOLD_ON_CONFLICT}
         RETURNING g.id, g.sample_batches
       ), up AS (
         SELECT id, sample_batches FROM upd UNION ALL SELECT id, sample_batches FROM ins
       )
       INSERT INTO error_group_samples AS s (group_id, slot, seq, samples)
       SELECT up.id, up.sample_batches % ${Number(ring)}, up.sample_batches, x.samples FROM up JOIN x ON x.id = up.id
       ON CONFLICT (group_id, slot) DO UPDATE SET seq = EXCLUDED.seq, samples = EXCLUDED.samples`,
      [JSON.stringify(rows)],
    );
    // A slot just filled with a whole ring's worth holds the 20 newest samples by itself: the group's
    // older slots can go (a hot group keeps 20 samples stored, not 400).
    const full = rows.filter((r) => r.samples.length >= ring).map((r) => r.id);
    if (full.length) {
      await tx.query(
        `DELETE FROM error_group_samples s USING error_groups g WHERE g.id = ANY($1::text[]) AND s.group_id = g.id AND s.seq < g.sample_batches`,
        [full],
      );
    }

    return rows.map((r) => {
      const p = prior.get(r.id);
      const hasProduction = (r.env_counts.production ?? 0) > 0;
      return {
        groupId: r.id,
        projectId: r.project_id,
        created: !p,
        regressed: p?.status === 'resolved',
        hasProduction,
        firstInProduction: hasProduction && !(p && Number(p.env_counts?.production ?? 0) > 0),
      };
    });
  };
}
