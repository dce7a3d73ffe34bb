import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import type { Environment } from '../../../schemas/error-event.ts';
import { drop, ok, type DropReason, type StampedEvent, type StepOutcome } from './outcome.ts';

/**
 * Caps (spec §7.5), decided inside the batch transaction.
 * - Monthly: occurrences per project, environment and UTC calendar month (by the edge's receive
 *   time). `unknown` is not proven production, so it counts against the preview cap.
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

export function monthOf(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 7);
}

export function monthlyCapFor(caps: ErrorCaps, environment: Environment): number {
  return environment === 'production' ? caps.productionPerMonth : caps.previewPerMonth;
}

export function createCapsStep(deps: { caps?: ErrorCaps } = {}) {
  const caps = deps.caps ?? LIMITS.errorCaps;
  return async function capsStep(tx: Queryable, events: StampedEvent[]): Promise<Array<StepOutcome<StampedEvent>>> {
    if (!events.length) return [];
    const key = (e: StampedEvent) => `${e.projectId}\u0000${monthOf(e.receivedAt)}\u0000${e.environment}`;
    const buckets = [...new Set(events.map(key))].sort();
    const usage = new Map<string, { accepted: number; openGroups: number; dropped: Partial<Record<DropReason, number>>; acceptedDelta: number }>();
    for (const b of buckets) {
      const [projectId, month, environment] = b.split('\u0000') as [string, string, string];
      await tx.query(
        `INSERT INTO error_monthly_usage (project_id, month, environment) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [projectId, month, environment],
      );
      const row = await tx.query<{ accepted: string | number }>(
        `SELECT accepted FROM error_monthly_usage WHERE project_id = $1 AND month = $2 AND environment = $3 FOR UPDATE`,
        [projectId, month, environment],
      );
      const open = await tx.query<{ n: string | number }>(
        `SELECT count(*) AS n FROM error_groups WHERE project_id = $1 AND status = 'unresolved' AND env_counts ? $2`,
        [projectId, environment],
      );
      usage.set(b, { accepted: Number(row.rows[0]?.accepted ?? 0), openGroups: Number(open.rows[0]?.n ?? 0), dropped: {}, acceptedDelta: 0 });
    }

    const groupIds = [...new Set(events.map((e) => e.groupId))].sort();
    const existing = await tx.query<{ id: string }>('SELECT id FROM error_groups WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [groupIds]);
    // Groups known in the project: existing rows plus the new ones this batch already let in.
    const known = new Set(existing.rows.map((r) => r.id));
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

    for (const b of buckets) {
      const [projectId, month, environment] = b.split('\u0000') as [string, string, string];
      const u = usage.get(b)!;
      if (!u.acceptedDelta && !Object.keys(u.dropped).length) continue;
      await tx.query(
        `UPDATE error_monthly_usage SET accepted = accepted + $4,
           dropped = (SELECT COALESCE(jsonb_object_agg(k, total), '{}'::jsonb) FROM (
             SELECT k, sum(v::bigint) AS total FROM (
               SELECT key AS k, value AS v FROM jsonb_each_text(dropped)
               UNION ALL SELECT key, value FROM jsonb_each_text($5::jsonb)) u GROUP BY k) t)
         WHERE project_id = $1 AND month = $2 AND environment = $3`,
        [projectId, month, environment, u.acceptedDelta, JSON.stringify(u.dropped)],
      );
    }
    return outcomes;
  };
}
