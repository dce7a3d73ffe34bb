import { parseBoundedJson } from '../../platform/bounded-json.ts';
import type { ErrorEvent } from '../../schemas/error-event.ts';
import type { ParseContext, Parsed } from '../batch-route.ts';
import { parseErrorBatch } from '../error-batch.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { errorEventOfSentry } from './sentry-event.ts';

/**
 * Sentry events as one bus message of the errors topic, validated and stamped exactly as `POST /v1/errors/i` would
 * (the envelope route's event items, the store route's body). Pure.
 */
export function toBatch(
  events: ErrorEvent[],
  sentryIds: string[],
  dropped: Record<string, number>,
  ctx: Pick<ParseContext, 'projectId' | 'originHost' | 'receivedAt' | 'hasOrigin'>,
): Parsed | Refusal {
  if (!events.length) return { ok: true, events: 0, value: Buffer.alloc(0), ids: sentryIds, dropped };
  const outcome = parseErrorBatch(Buffer.from(JSON.stringify({ batch: events })), {
    projectId: ctx.projectId,
    originHost: ctx.originHost,
    receivedAt: ctx.receivedAt,
    defaultRuntime: ctx.hasOrigin ? 'browser' : 'node',
  });
  if (!outcome.ok) return refusal('invalid_request', outcome.message, { fields: outcome.fields });
  return { ...outcome, ids: sentryIds, dropped };
}

/** Our events of Sentry events (JSON values); one with neither an exception nor a message is counted `event_without_error`. */
export function errorEventsOfSentry(values: unknown[], dropped: Record<string, number>): ErrorEvent[] {
  const events: ErrorEvent[] = [];
  for (const value of values) {
    const event = errorEventOfSentry(value);
    if (event) events.push(event);
    else dropped.event_without_error = (dropped.event_without_error ?? 0) + 1;
  }
  return events;
}

/** A store body (one event as JSON): the event and its id. */
export function eventOf(payload: Buffer, dropped: Record<string, number>): { event?: ErrorEvent; id?: string } | Refusal {
  const bounded = parseBoundedJson(payload.toString('utf8'));
  if (!bounded.ok) return refusal('invalid_request', bounded.reason === 'too_deep' ? `an event item is ${bounded.message}` : 'an event item is not valid JSON');
  const json = bounded.value;
  const [event] = errorEventsOfSentry([json], dropped);
  const id = (json as { event_id?: unknown } | null)?.event_id;
  return { event, id: typeof id === 'string' ? id : undefined };
}
