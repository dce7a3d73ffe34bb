import { createHash } from 'node:crypto';
import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import { copyTextColumns, type Environment } from '../../../schemas/error-event.ts';
import { formatFrame } from '../stack-parser.ts';
import { withoutContext } from './group-step.ts';
import type { SymbolicatedFrame } from '../../../schemas/symbolicated-frame.ts';
import { chTime } from '../../time-text.ts';
import type { FingerprintedEvent } from './outcome.ts';
import { facetTagsOf } from '../facet-tags.ts';
import type { EventContext } from '../../../schemas/error-context.ts';

/**
 * Occurrence rows in ClickHouse, one per accepted event, written after the Postgres commit. The
 * table is keyed by event id (ReplacingMergeTree) and the insert carries a dedup token derived from
 * the event ids, so a re-delivered batch (after a crash between the commit and this insert) writes
 * the same rows again and no more.
 */
export const OCCURRENCES_TABLE = 'error_occurrences';

export function occurrenceRow(e: FingerprintedEvent, environment: Environment | string) {
  const ev = e.event;
  const row: Record<string, unknown> = {
    project_id: e.projectId,
    group_id: e.groupId,
    event_id: ev.eventId,
    fingerprint: e.fingerprint,
    environment,
    received_at: chTime(e.receivedAt),
    client_time: ev.clientTime !== undefined && Number.isFinite(ev.clientTime) ? chTime(ev.clientTime) : null,
    name: ev.name,
    message: ev.message,
    stack: ev.stack,
    culprit: e.inAppFrame ? formatFrame(e.inAppFrame) : '',
    runtime: ev.runtime,
    origin_host: e.originHost ?? '',
    extra: ev.extra ? JSON.stringify(ev.extra) : '',
    truncated: ev.truncated ?? [],
    minified_stack: ev.minifiedStack ?? '',
    // Without context lines: the samples carry them (group-step.ts); an occurrence row stays small.
    frames: ev.frames ? framesJson(ev.frames) : '',
  };
  // Each text field under its column (schemas/error-event.ts); '' where the event has none.
  copyTextColumns(ev, row);
  // The context (issue 40, migration 0006): level, release, the facet tags, breadcrumbs and the rest as JSON.
  const c = ev.context;
  row.level = c?.level ?? '';
  row.release = c?.release ?? '';
  row.tags = facetTagsOf({ ...e, environment: environment as Environment });
  row.breadcrumbs = c?.breadcrumbs ? JSON.stringify(c.breadcrumbs) : '';
  row.context = c ? contextJson(c) : '';
  if (row.user_id === '' && c?.user?.id) row.user_id = c.user.id;
  return row;
}

/** The context without its breadcrumbs (a column of their own), level, release and tags (columns too); '' when nothing is left. */
export function contextJson(c: EventContext): string {
  const { breadcrumbs: _b, level: _l, release: _r, tags: _t, ...rest } = c;
  for (const _ in rest) return JSON.stringify(rest);
  return '';
}

/**
 * Frames as the occurrence row stores them: JSON, without context lines. The same error through the same maps shares
 * one frames list (symbolicate-step.ts remembers it), so its JSON is made once.
 */
const framesJsonOf = new WeakMap<SymbolicatedFrame[], string>();
function framesJson(frames: SymbolicatedFrame[]): string {
  let json = framesJsonOf.get(frames);
  if (json === undefined) framesJsonOf.set(frames, (json = JSON.stringify(withoutContext(frames))));
  return json;
}

export function createOccurrenceStep(deps: { analytics: AnalyticalStore }) {
  return async function occurrenceStep(rows: Array<Record<string, unknown>>): Promise<void> {
    if (!rows.length) return;
    const id = (r: Record<string, unknown>) => r.event_id as string;
    const sorted = [...rows].sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
    const dedupToken = 'occ-' + createHash('sha256').update(sorted.map(id).join(',')).digest('hex');
    await deps.analytics.insert(OCCURRENCES_TABLE, sorted, { dedupToken });
  };
}
