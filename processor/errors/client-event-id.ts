import type { StampedErrorEvent } from '../../schemas/error-event.ts';

/**
 * The SDK's own id of an error event, when it sent one: Sentry SDKs name every event (`event_id`, kept by the edge as
 * `extra.sentry.eventId`, ingest/sentry/sentry-event.ts), and user feedback names the event it is about by that id
 * (processor/feedback/). The edge gives every event an id of its own, so the ledger keeps this one beside it.
 */
export function clientEventIdOf(event: StampedErrorEvent): string | null {
  const sentry = (event.extra as { sentry?: { eventId?: unknown } } | undefined)?.sentry;
  const id = sentry && typeof sentry === 'object' ? sentry.eventId : undefined;
  return typeof id === 'string' && id.length > 0 && id.length <= 128 ? id : null;
}
