import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { monthlyCapFor, usageMonth } from '../../../schemas/usage-month.ts';
import { drop, ok, type DropReason, type StampedEvent, type StepOutcome } from './outcome.ts';

/**
 * Caps (spec §7.5), decided inside the batch transaction.
 * - Monthly: occurrences per project, environment and UTC calendar month, each held to its cap
 *   (schemas/usage-month.ts: the month and which cap `unknown` counts against).
 * - Open groups: at most N unresolved groups per project and environment; beyond that a new
 *   fingerprint is dropped, while occurrences of existing groups keep counting.
 * The usage row of each (project, month, environment) is locked first (in a fixed order), which
 * serialises concurrent processors of one project and keeps the counters exact. Accepted and
 * dropped counts are written here; the edge reads them to learn a project is capped.
 */
export interface ErrorCaps {
  productionPerMonth: number;
  previewPerMonth: number;
  openGroupsPerEnvironment: number;
}

/** A group row as it was before this batch, locked for the rest of the transaction. */
export interface PriorGroup {
  id: string;
  status: string;
  env_counts: Record<string, number>;
  /** The group has no culprit (no in-app frame so far) or no suggestion yet: the group step fills them. */
  no_culprit: boolean;
  no_suggestion: boolean;
}

export interface CapsResult {
  outcomes: Array<StepOutcome<StampedEvent>>;
  /** Every existing group the batch's events belong to. */
  priorGroups: Map<string, PriorGroup>;
}

export function createCapsStep(deps: { caps?: ErrorCaps } = {}) {
  const caps = deps.caps ?? LIMITS.errorCaps;
  return async function capsStep(tx: Queryable, events: StampedEvent[]): Promise<CapsResult> {
    if (!events.length) return { outcomes: [], priorGroups: new Map() };
    const key = (e: StampedEvent) => `${e.projectId}\u0000${usageMonth(e.receivedAt)}\u0000${e.environment}`;
    const buckets = [...new Set(events.map(key))].sort();
    const parts = buckets.map((b) => b.split('\u0000') as [string, string, string]);
    const cols = [parts.map((p) => p[0]), parts.map((p) => p[1]), parts.map((p) => p[2])];
    // Set-based, so a batch spanning many projects costs the same few round trips as one project.
    await tx.query(
      `INSERT INTO error_monthly_usage (project_id, month, environment)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
      cols,
    );
    // Locked in a fixed order (LockRows runs above the sort), so concurrent processors queue instead of deadlocking.
    const locked = await tx.query<{ project_id: string; month: string; environment: string; accepted: string | number }>(
      `SELECT u.project_id, u.month, u.environment, u.accepted
         FROM error_monthly_usage u
         JOIN unnest($1::text[], $2::text[], $3::text[]) AS b(p, m, e) ON u.project_id = b.p AND u.month = b.m AND u.environment = b.e
        ORDER BY u.project_id, u.month, u.environment
        FOR UPDATE OF u`,
      cols,
    );
    const groupIds = [...new Set(events.map((e) => e.groupId))].sort();
    // Locked here (after the usage rows, in id order) and handed to the group step, which needs their
    // status and counts: the batch reads and locks its groups once.
    const existing = await tx.query<PriorGroup>(
      'SELECT id, status, env_counts, culprit IS NULL AS no_culprit, suggestion IS NULL AS no_suggestion FROM error_groups WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
      [groupIds],
    );
    // Groups known in the project: existing rows plus the new ones this batch already let in.
    const known = new Set(existing.rows.map((r) => r.id));

    // Open groups are counted only for projects where this batch would open a new one: the cap applies to
    // new fingerprints alone, and the count reads every open group of the project. A batch of known
    // groups (the usual case) skips it.
    const projectsOpening = [...new Set(events.filter((e) => !known.has(e.groupId)).map((e) => e.projectId))];
    const openBy = new Map<string, number>();
    if (projectsOpening.length) {
      const open = await tx.query<{ project_id: string; environment: string; n: string | number }>(
        `SELECT g.project_id, k.env AS environment, count(*) AS n
           FROM error_groups g CROSS JOIN LATERAL jsonb_object_keys(g.env_counts) AS k(env)
          WHERE g.project_id = ANY($1::text[]) AND g.status = 'unresolved'
          GROUP BY g.project_id, k.env`,
        [projectsOpening],
      );
      for (const r of open.rows) openBy.set(`${r.project_id}\u0000${r.environment}`, Number(r.n));
    }
    const usage = new Map<string, { accepted: number; openGroups: number; dropped: Partial<Record<DropReason, number>>; acceptedDelta: number }>();
    for (const r of locked.rows) {
      usage.set(`${r.project_id}\u0000${r.month}\u0000${r.environment}`, {
        accepted: Number(r.accepted),
        openGroups: openBy.get(`${r.project_id}\u0000${r.environment}`) ?? 0,
        dropped: {},
        acceptedDelta: 0,
      });
    }
    const newInBucket = new Map<string, Set<string>>();

    const outcomes = events.map((e): StepOutcome<StampedEvent> => {
      const b = key(e);
      const u = usage.get(b)!;
      let reason: DropReason | undefined;
      if (u.accepted + u.acceptedDelta >= monthlyCapFor(caps, e.environment)) reason = 'monthly_cap';
      else if (!known.has(e.groupId)) {
        const fresh = newInBucket.get(b) ?? new Set<string>();
        if (!fresh.has(e.groupId) && u.openGroups + fresh.size >= caps.openGroupsPerEnvironment) reason = 'open_groups_cap';
        else {
          fresh.add(e.groupId);
          newInBucket.set(b, fresh);
        }
      }
      if (reason) {
        u.dropped[reason] = (u.dropped[reason] ?? 0) + 1;
        return drop(reason);
      }
      u.acceptedDelta++;
      return ok(e);
    });

    const changed = buckets.flatMap((b) => {
      const u = usage.get(b)!;
      if (!u.acceptedDelta && !Object.keys(u.dropped).length) return [];
      const [project_id, month, environment] = b.split('\u0000') as [string, string, string];
      return [{ project_id, month, environment, delta: u.acceptedDelta, dropped: u.dropped }];
    });
    if (changed.length) {
      await tx.query(
        `UPDATE error_monthly_usage u SET accepted = u.accepted + x.delta,
           dropped = (SELECT COALESCE(jsonb_object_agg(k, total), '{}'::jsonb) FROM (
             SELECT k, sum(v::bigint) AS total FROM (
               SELECT key AS k, value AS v FROM jsonb_each_text(u.dropped)
               UNION ALL SELECT key, value FROM jsonb_each_text(x.dropped)) d GROUP BY k) t)
          FROM jsonb_to_recordset($1::jsonb) AS x(project_id text, month text, environment text, delta bigint, dropped jsonb)
         WHERE u.project_id = x.project_id AND u.month = x.month AND u.environment = x.environment`,
        [JSON.stringify(changed)],
      );
    }
    return { outcomes, priorGroups: new Map(existing.rows.map((r) => [r.id, r])) };
  };
}
