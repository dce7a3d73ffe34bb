import type { FeedbackItem } from '../../../schemas/bus/client-items.ts';
import { obj, text } from './item-fields.ts';

/**
 * A Sentry `user_report` item (older SDKs' captureUserFeedback, @sentry/core's UserFeedback) as the bus's
 * FeedbackItem: `{ event_id, name, email, comments }`, where `event_id` is the error event the report is about. It
 * has no id, time, release or environment of its own: its id is `user_report:<event_id>` (one report per event, as
 * Sentry keeps one, so a report sent again is stored once), `newId()` without an event; its time `receivedAt`.
 * Undefined without comments.
 */
export function feedbackOfUserReport(input: unknown, receivedAt: number, newId: () => string): FeedbackItem | undefined {
  const r = obj(input);
  const message = text(r?.comments, 4096);
  if (!r || !message) return undefined;
  const eventId = text(r.event_id, 100);
  const out: FeedbackItem = { id: eventId ? `user_report:${eventId}` : newId(), source: 'user_report', message, timestamp: receivedAt };
  const name = text(r.name, 256);
  const email = text(r.email, 256);
  if (eventId) out.eventId = eventId;
  if (name) out.name = name;
  if (email) out.email = email;
  return out;
}
