import type { AnalyticsEventInput } from '../../schemas/analytics-event.ts';
import { isObject } from './posthog-body.ts';

/**
 * One PostHog event as our analytics event (pure). What is not ours is left for the usual check to refuse by name
 * (an event without a name or a distinct id is dropped and counted, as on `POST /v1/analytics/i`).
 *
 * | PostHog                                              | ours                                   |
 * | ---------------------------------------------------- | -------------------------------------- |
 * | `event`                                              | `event`                                |
 * | `distinct_id`, else `properties.distinct_id`         | `distinctId` (a number as text)        |
 * | `properties` without `token`, `api_key`, `distinct_id` | `properties`                         |
 * | `$set`, `$set_once` beside the properties            | `properties.$set`, `properties.$set_once` |
 * | `timestamp`, moved by the client's clock skew        | `timestamp` (then clamped to the window) |
 * |   (`sent_at` to the receive time); else now - `offset` |                                      |
 * | `uuid`                                               | `uuid` (the same uuid twice is stored once) |
 * | `properties.$session_id`, `properties.$pathname`     | `sessionId`, `path`                    |
 *
 * The project's key (`token`) is a credential of the request, not a property of the event: it is never stored.
 */
const asId = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined);
const NOT_PROPERTIES = new Set(['token', 'api_key', 'distinct_id']);

export function eventOfPostHog(raw: unknown, receivedAt: number, sentAt: number): AnalyticsEventInput | unknown {
  if (!isObject(raw)) return raw;
  const props = isObject(raw.properties) ? raw.properties : {};
  const set = isObject(raw.$set) ? raw.$set : undefined;
  const setOnce = isObject(raw.$set_once) ? raw.$set_once : undefined;
  // The parsed body is ours: its properties are used as they are unless something must go or come in.
  let properties = props;
  if (set || setOnce || 'token' in props || 'api_key' in props || 'distinct_id' in props) {
    properties = {};
    for (const k of Object.keys(props)) if (!NOT_PROPERTIES.has(k)) properties[k] = props[k];
    if (set) properties.$set = set;
    if (setOnce) properties.$set_once = setOnce;
  }

  const out: Record<string, unknown> = { event: raw.event, distinctId: asId(raw.distinct_id) ?? asId(props.distinct_id) ?? asId(raw.$distinct_id) };
  if (properties !== props || raw.properties !== undefined) out.properties = properties;
  const at = eventTime(raw, receivedAt, sentAt);
  if (at !== undefined) out.timestamp = at;
  if (raw.uuid !== undefined) out.uuid = raw.uuid;
  if (typeof props.$session_id === 'string' && props.$session_id) out.sessionId = props.$session_id;
  if (typeof props.$pathname === 'string' && props.$pathname) out.path = props.$pathname;
  return out;
}

/** PostHog's rule: the event's time, corrected by how far the client's clock was off when it sent (`sent_at`). */
function eventTime(raw: Record<string, unknown>, receivedAt: number, sentAt: number): number | undefined {
  const t = typeof raw.timestamp === 'string' ? Date.parse(raw.timestamp) : typeof raw.timestamp === 'number' ? raw.timestamp : Number.NaN;
  if (Number.isFinite(t)) return Number.isFinite(sentAt) ? t + (receivedAt - sentAt) : t;
  if (typeof raw.offset === 'number' && Number.isFinite(raw.offset)) return receivedAt - raw.offset;
  return undefined;
}
