import type { SessionAggregate } from '../../../schemas/bus/client-items.ts';
import { count, epochMs, obj, releaseAndEnvironment, textOrNumber } from './item-fields.ts';

/**
 * A Sentry `sessions` item (server-mode session aggregates, @sentry/core's recordRequestSession) as the bus's
 * SessionAggregates: `{ aggregates: [{ started: ISO minute, did?, exited?, errored?, abnormal?, crashed?, unhandled? }],
 * attrs: { release, environment } }`; a missing count is 0. At most `max` buckets are taken (the message's room);
 * the rest, and buckets without a start, are counted in `dropped` (`session_aggregates_unread`).
 */
export function sessionAggregatesOfSentry(input: unknown, max: number): { aggregates: SessionAggregate[]; dropped: number } | undefined {
  const s = obj(input);
  if (!s || !Array.isArray(s.aggregates)) return undefined;
  const attrs = releaseAndEnvironment(obj(s.attrs));
  const aggregates: SessionAggregate[] = [];
  let dropped = 0;
  for (const raw of s.aggregates) {
    const a = obj(raw);
    const started = epochMs(a?.started);
    if (!a || started === undefined || aggregates.length >= max) {
      dropped++;
      continue;
    }
    const out: SessionAggregate = {
      started,
      exited: count(a.exited),
      errored: count(a.errored),
      abnormal: count(a.abnormal),
      crashed: count(a.crashed),
      ...attrs,
    };
    const unhandled = count(a.unhandled);
    if (unhandled) out.unhandled = unhandled;
    const did = textOrNumber(a.did, 256);
    if (did) out.did = did;
    aggregates.push(out);
  }
  return { aggregates, dropped };
}
