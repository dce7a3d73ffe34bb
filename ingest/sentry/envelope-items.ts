import { parseBoundedJson } from '../../platform/bounded-json.ts';
import { CLIENT_ITEMS_MAX, type CheckInItem, type FeedbackItem, type SessionAggregate, type SessionUpdate } from '../../schemas/bus/client-items.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { EnvelopeItem } from './sentry-envelope.ts';
import { checkInOfSentry } from './items/check-in.ts';
import { discardedOfClientReport } from './items/client-report.ts';
import { feedbackOfSentry } from './items/feedback.ts';
import { sessionUpdateOfSentry } from './items/session.ts';
import { sessionAggregatesOfSentry } from './items/sessions.ts';
import { feedbackOfUserReport } from './items/user-report.ts';

/**
 * An envelope's items sorted by what this service does with them, by Sentry's data categories as @sentry/core 11
 * names them (utils/envelope.js, DATA_CATEGORY_OVERRIDES: the category an SDK's rate limits are kept by). Pure.
 *
 *   kind       item types                          category (the SDK's)         what happens
 *   errors     event                               error                        error events (the errors cap and limits)
 *   sessions   session, sessions                   session                      release health (their own limit)
 *   monitors   check_in                            monitor                      cron check-ins (their own limit)
 *   feedback   feedback, user_report               feedback, default            user feedback (their own limit)
 *   (counted)  client_report                       internal                     what the SDK dropped, counted; never limited
 *   (unkept)   transaction, span, replay_*, ...,   UNKEPT_CATEGORIES            dropped, counted; the SDK is told to stop sending them
 *              attachment                                                       (an attachment: the event beside it is kept)
 * Each item is held to its own size (LIMITS.sentryIngest.itemBytes): past it, or malformed, it is dropped and
 * counted (`oversize_<type>`, `invalid_<type>`); the rest of the envelope is kept.
 */
const S = LIMITS.sentryIngest;

/** @sentry/core 11.12's DATA_CATEGORY_OVERRIDES: an item type's category is its own name unless overridden here. */
export const DATA_CATEGORY_OVERRIDES: Record<string, string> = {
  sessions: 'session',
  event: 'error',
  client_report: 'internal',
  user_report: 'default',
  profile_chunk: 'profile',
  replay_event: 'replay',
  replay_recording: 'replay',
  check_in: 'monitor',
  raw_security: 'security',
  log: 'log_item',
  metric: 'trace_metric',
};
export const dataCategoryOf = (type: string): string => DATA_CATEGORY_OVERRIDES[type] ?? type;

/** Item types this service never keeps: answered with a long limit on their categories, never charged to anything. */
export const UNKEPT_TYPES = [
  'transaction',
  'span',
  'replay_event',
  'replay_recording',
  'replay_video',
  'profile',
  'profile_chunk',
  'log',
  'otel_log',
  'metric',
  'trace_metric',
  'statsd',
  'metric_bucket',
  // Never stored: an SDK told so sends its events without their attachments (up to 20 MB each) from then on.
  'attachment',
] as const;
export const UNKEPT_CATEGORIES = [...new Set(UNKEPT_TYPES.map(dataCategoryOf))];

export type ItemKind = 'errors' | 'sessions' | 'monitors' | 'feedback';
export const KIND_OF_TYPE: Record<string, ItemKind> = {
  event: 'errors',
  session: 'sessions',
  sessions: 'sessions',
  check_in: 'monitors',
  feedback: 'feedback',
  user_report: 'feedback',
};
/** Item types counted by name when dropped; any other is `item_other` (client input never names a counter). */
const NAMED_TYPES = new Set<string>([...UNKEPT_TYPES, 'attachment', 'raw_security', 'security', 'metric_meta', 'client_report']);
const ITEM_BYTES: Record<string, number> = S.itemBytes;

export interface SortedEnvelope {
  /** Event items as JSON, within the per-envelope count. */
  events: unknown[];
  /** The ids to answer with: the envelope's event_id, then its events'. */
  ids: string[];
  sessions: SessionUpdate[];
  sessionAggregates: SessionAggregate[];
  feedback: FeedbackItem[];
  checkIns: CheckInItem[];
  /** The kinds this envelope holds something of, each with the SDK's categories of its items (named when it is limited). */
  kinds: Map<ItemKind, Set<string>>;
  /** What was taken and not kept, by reason; and the SDK's own dropped counts (`sdk_discarded_<reason>`). */
  dropped: Record<string, number>;
  /** Items that could not be read (invalid JSON or shape): the envelope is refused when nothing else was in it. */
  invalid: number;
  /** Why the first unreadable item could not be read, when its JSON says (nested past the limit): for the 400. */
  problem?: string;
}

export interface SortContext {
  receivedAt: number;
  newId: () => string;
}

const add = (dropped: Record<string, number>, reason: string, n = 1) => (dropped[reason] = (dropped[reason] ?? 0) + n);

function json(payload: Buffer, problem?: (message: string) => void): unknown {
  const parsed = parseBoundedJson(payload.toString('utf8'));
  if (!parsed.ok && parsed.reason === 'too_deep') problem?.(parsed.message);
  return parsed.ok ? parsed.value : undefined;
}

export function sortEnvelope(header: Record<string, unknown>, items: EnvelopeItem[], ctx: SortContext): SortedEnvelope {
  const out: SortedEnvelope = {
    events: [],
    ids: [],
    sessions: [],
    sessionAggregates: [],
    feedback: [],
    checkIns: [],
    kinds: new Map(),
    dropped: {},
    invalid: 0,
  };
  if (typeof header.event_id === 'string' && header.event_id.length <= 128) out.ids.push(header.event_id);
  for (const item of items) {
    const { type, payload } = item;
    const kind = KIND_OF_TYPE[type];
    if (type === 'client_report') {
      if (payload.length <= ITEM_BYTES.client_report!) discardedOfClientReport(json(payload), out.dropped);
      add(out.dropped, 'item_client_report');
      continue;
    }
    if (!kind) {
      add(out.dropped, `item_${NAMED_TYPES.has(type) ? type : 'other'}`);
      continue;
    }
    if (payload.length > ITEM_BYTES[type]!) {
      add(out.dropped, `oversize_${type}`);
      continue;
    }
    const value = json(payload, (message) => (out.problem ??= `an ${type} item is ${message}`));
    if (!take(out, type, value, ctx)) {
      out.invalid++;
      add(out.dropped, `invalid_${type}`);
      continue;
    }
    let categories = out.kinds.get(kind);
    if (!categories) out.kinds.set(kind, (categories = new Set()));
    categories.add(dataCategoryOf(type));
  }
  return out;
}

/** One kept item into its list; false when it is not what its type says. Past a list's room it is counted `<kind>_past_limit`. */
function take(out: SortedEnvelope, type: string, value: unknown, ctx: SortContext): boolean {
  const room = (list: unknown[], max: number, reason: string) => list.length < max || (add(out.dropped, reason), false);
  switch (type) {
    case 'event': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
      const id = (value as { event_id?: unknown }).event_id;
      if (typeof id === 'string' && id.length <= 128 && !out.ids.includes(id)) out.ids.push(id);
      if (room(out.events, S.maxEventsPerEnvelope, 'events_past_limit')) out.events.push(value);
      return true;
    }
    case 'session': {
      const s = sessionUpdateOfSentry(value, ctx.receivedAt);
      if (s && room(out.sessions, CLIENT_ITEMS_MAX.sessions, 'sessions_past_limit')) out.sessions.push(s);
      return s !== undefined;
    }
    case 'sessions': {
      const a = sessionAggregatesOfSentry(value, CLIENT_ITEMS_MAX.sessionAggregates - out.sessionAggregates.length);
      if (a?.dropped) add(out.dropped, 'session_aggregates_unread', a.dropped);
      if (a) out.sessionAggregates.push(...a.aggregates);
      return a !== undefined;
    }
    case 'check_in': {
      const c = checkInOfSentry(value, ctx.receivedAt);
      if (c && room(out.checkIns, CLIENT_ITEMS_MAX.checkIns, 'check_ins_past_limit')) out.checkIns.push(c);
      return c !== undefined;
    }
    case 'feedback':
    case 'user_report': {
      const f = type === 'feedback' ? feedbackOfSentry(value, ctx.receivedAt, ctx.newId) : feedbackOfUserReport(value, ctx.receivedAt, ctx.newId);
      if (f && room(out.feedback, CLIENT_ITEMS_MAX.feedback, 'feedback_past_limit')) out.feedback.push(f);
      return f !== undefined;
    }
  }
  return false;
}
