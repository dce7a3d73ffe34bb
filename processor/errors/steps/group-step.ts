import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { createHash } from 'node:crypto';
import type { GroupRow, GroupsRepository, PriorGroup, Unignore } from '../repositories/groups-repository.ts';
import { copyTextFields } from '../../../schemas/error-event.ts';
import type { EventContext } from '../../../schemas/error-context.ts';
import type { SymbolicatedFrame } from '../../../schemas/symbolicated-frame.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { formatFrame } from '../stack-parser.ts';
import { suggestFirstCheck } from '../suggestion.ts';
import type { EnvironmentStampedEvent } from './outcome.ts';
import { isoTime } from '../../time-text.ts';

/**
 * Groups (spec §2.6, §3.1): the batch's events folded into one row per group, written in one statement
 * inside the batch transaction (groups-repository.ts: an update by id for the groups the pipeline locked,
 * an insert for new ones). Counts are increments, so concurrent processors stay exact. A resolved group
 * that gets an occurrence is unresolved again and counts one regression; an ignored group keeps counting
 * and stays ignored (until its condition is met, issue 41: then unresolved again, not a regression); a new group starts unresolved. Issue 41: the group keeps the deploys it was first and last seen
 * in and regressed in; a group resolving in next deploy reopens only for an event of a deploy newer than its mark.
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
  /** Issue 41: it was ignored until N events / users / a time, and this batch brought it back (not a regression). */
  unignored?: Unignore['reason'];
}

/**
 * A kept sample: already scrubbed. Symbolication's detail (issue 37: the stack as sent, each frame's resolution and
 * context lines) travels with `newestOfBatch` samples only: the newest sample of each group in a batch, the one an
 * issue shows first. A batch's older samples of the same group threw the same error through the same code; carrying
 * the frames on each made them most of a batch's bytes (bench/symbolication.bench.ts: 0.44x the events/s without).
 */
export function sampleOf(e: EnvironmentStampedEvent, newestOfBatch = true) {
  const ev = e.event;
  const sample: Record<string, unknown> = {
    eventId: ev.eventId,
    receivedAt: isoTime(e.receivedAt),
    clientTime: ev.clientTime !== undefined ? isoTime(ev.clientTime) : undefined,
    environment: e.environment,
    name: ev.name,
    message: ev.message,
    runtime: ev.runtime,
    originHost: e.originHost ?? undefined,
    extra: ev.extra,
    truncated: ev.truncated.length ? ev.truncated : undefined,
    // Symbolication (issue 37): the stack as sent when a map resolved a frame, and each frame's resolution.
    minifiedStack: newestOfBatch ? ev.minifiedStack : undefined,
    frames: newestOfBatch ? ev.frames : undefined,
    // The context (issue 40): on every sample, its breadcrumbs (up to 32K characters) on the newest of a batch only,
    // as the frames; the occurrence rows hold every event's.
    context: ev.context && (newestOfBatch || !ev.context.breadcrumbs ? ev.context : withoutBreadcrumbs(ev.context)),
  };
  // Every text field, under its own name (schemas/error-event.ts).
  copyTextFields(ev, sample);
  return sample;
}

function withoutBreadcrumbs(c: EventContext): EventContext {
  const { breadcrumbs: _, ...rest } = c;
  return rest;
}

/** Frames without their context lines (occurrence rows, a batch's older samples). */
export function withoutContext(frames: SymbolicatedFrame[] | undefined): SymbolicatedFrame[] | undefined {
  return frames?.map((f) => (f.context ? { minified: f.minified, original: f.original, inApp: f.inApp, resolution: f.resolution } : f));
}

/**
 * Ignore until (issue 41): which of the batch's ignored groups met their condition: N events since the ignore (the
 * locked count plus the batch's), N distinct users (their hashed keys kept in Postgres, at most N), or a time the
 * batch's newest event is past (the triage sweep also checks it every minute). Escalation is the sweep's.
 */
async function metIgnoreConditions(
  tx: Queryable,
  groups: Pick<GroupsRepository, 'noteIgnoredUsers'>,
  rows: GroupRow[],
  prior: Map<string, PriorGroup>,
  byGroup: Map<string, EnvironmentStampedEvent[]>,
): Promise<Unignore[]> {
  const out: Unignore[] = [];
  for (const r of rows) {
    const p = prior.get(r.id);
    if (p?.status !== 'ignored') continue;
    const at = r.last_seen;
    if (p.ignore_count !== null && Number(p.count) + r.count - Number(p.ignore_count_base ?? p.count) >= Number(p.ignore_count))
      out.push({ id: r.id, reason: 'events', at });
    else if (p.ignore_until_at !== null && Date.parse(at) >= new Date(p.ignore_until_at).getTime()) out.push({ id: r.id, reason: 'time', at });
    else if (p.ignore_user_count !== null) {
      const keys = [...new Set(byGroup.get(r.id)!.flatMap((e) => userKeyOf(e) ?? []))].slice(0, p.ignore_user_count);
      if (keys.length && (await groups.noteIgnoredUsers(tx, r.id, keys, p.ignore_user_count)) >= p.ignore_user_count)
        out.push({ id: r.id, reason: 'users', at });
    }
  }
  return out;
}

/** The event's user for "ignore until N users": its id, else email, else IP address, hashed (no PII kept); none: not counted. */
export function userKeyOf(e: EnvironmentStampedEvent): string | undefined {
  const u = e.event.context?.user;
  const key = u?.id ? `id:${u.id}` : e.event.userId ? `id:${e.event.userId}` : u?.email ? `email:${u.email}` : u?.ipAddress ? `ip:${u.ipAddress}` : undefined;
  return key === undefined ? undefined : createHash('sha256').update(key).digest('hex').slice(0, 32);
}

export function createGroupStep(deps: { groups: Pick<GroupsRepository, 'upsert' | 'noteIgnoredUsers' | 'unignore'> }) {
  // The ring's length: a group keeps this many samples.
  const ring = LIMITS.groupSamples;
  /** `prior`: the batch's existing groups as the pipeline locked and read them. */
  return async function groupStep(tx: Queryable, accepted: EnvironmentStampedEvent[], prior: Map<string, PriorGroup>): Promise<GroupChange[]> {
    if (!accepted.length) return [];
    const byGroup = new Map<string, EnvironmentStampedEvent[]>();
    for (const e of accepted) {
      const list = byGroup.get(e.groupId) ?? [];
      list.push(e);
      byGroup.set(e.groupId, list);
    }
    const ids = [...byGroup.keys()].sort();

    const rows = ids.map((id): GroupRow => {
      // Newest first: later receive time, then later position in the batch.
      const events = byGroup
        .get(id)!
        .map((e, i) => ({ e, i }))
        .sort((a, b) => b.e.receivedAt - a.e.receivedAt || b.i - a.i)
        .map((x) => x.e);
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
      // An existing group was read and locked by the pipeline in this transaction, so its new env counts
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
        samples: events.slice(0, ring).map((e, i) => sampleOf(e, i === 0)),
        // Issue 41: the deploys (events oldest last): first seen in the oldest event's, last seen in the newest one's.
        first_deploy_id: events[events.length - 1]!.deployId ?? null,
        last_deploy_id: events.find((e) => e.deployId)?.deployId ?? null,
        deploy_ids: [...new Set(events.flatMap((e) => (e.deployId ? [e.deployId] : [])))],
      };
    });

    const regressions = await deps.groups.upsert(tx, rows);
    const unignored = await metIgnoreConditions(tx, deps.groups, rows, prior, byGroup);
    await deps.groups.unignore(tx, unignored);
    const reasonOf = new Map(unignored.map((u) => [u.id, u.reason]));

    return rows.map((r) => {
      const p = prior.get(r.id);
      const hasProduction = (r.env_counts.production ?? 0) > 0;
      return {
        groupId: r.id,
        projectId: r.project_id,
        created: !p,
        // A resolved group always reopens; a resolving one (issue 41) when an event's deploy is newer than its mark.
        regressed: !!p && (regressions.get(r.id) ?? 0) > Number(p.regression_count),
        hasProduction,
        firstInProduction: hasProduction && !(p && Number(p.env_counts?.production ?? 0) > 0),
        ...(reasonOf.has(r.id) ? { unignored: reasonOf.get(r.id) } : {}),
      };
    });
  };
}
