import { SESSION_STATUSES, type SessionStatus, type SessionUpdate } from '../../../schemas/bus/client-items.ts';
import { count, epochMs, obj, releaseAndEnvironment, seconds, textOrNumber } from './item-fields.ts';

/**
 * A Sentry `session` item (one update of one session, @sentry/core's sessionToJSON) as the bus's SessionUpdate:
 *   { sid, did?, init, started: ISO, timestamp: ISO, status, errors, duration?, abnormal_mechanism?,
 *     attrs: { release, environment, ip_address?, user_agent? } }
 * `unhandled` (an unhandled error that did not end the session, @sentry/browser 10+) is kept as such. The address and the
 * user agent are not kept (the edge stamps the request's User-Agent on the message). Undefined when it has no sid,
 * no start or a status no SDK sends.
 */
const STATUS: Record<string, SessionStatus> = Object.fromEntries(SESSION_STATUSES.map((s) => [s, s]));

export function sessionUpdateOfSentry(input: unknown, receivedAt: number): SessionUpdate | undefined {
  const s = obj(input);
  const sid = textOrNumber(s?.sid, 128);
  const status = typeof s?.status === 'string' ? STATUS[s.status] : s?.status === undefined ? 'ok' : undefined;
  const started = epochMs(s?.started);
  if (!s || !sid || !status || started === undefined) return undefined;
  const out: SessionUpdate = {
    sid,
    init: s.init === true,
    status,
    errors: count(s.errors),
    started,
    timestamp: epochMs(s.timestamp) ?? receivedAt,
    ...releaseAndEnvironment(obj(s.attrs)),
  };
  const did = textOrNumber(s.did, 256);
  if (did) out.did = did;
  const duration = seconds(s.duration);
  if (duration !== undefined) out.duration = duration;
  return out;
}
