import type { FeedbackItem } from '../../../schemas/bus/client-items.ts';
import { epochMs, obj, releaseAndEnvironment, text } from './item-fields.ts';

/**
 * A Sentry `feedback` item (@sentry/core's captureFeedback, the feedback widget) as the bus's FeedbackItem. The
 * item is an event of `type: 'feedback'` whose `contexts.feedback` holds
 *   { message, contact_email?, name?, url?, source?, associated_event_id? }
 * beside the event's own event_id, timestamp (epoch seconds), release and environment. Undefined without a message.
 * `newId`: the id when the event has none.
 */
export function feedbackOfSentry(input: unknown, receivedAt: number, newId: () => string): FeedbackItem | undefined {
  const e = obj(input);
  const f = obj(obj(e?.contexts)?.feedback);
  const message = text(f?.message, 4096);
  if (!e || !f || !message) return undefined;
  const out: FeedbackItem = {
    id: text(e.event_id, 128) ?? newId(),
    source: 'feedback',
    message,
    timestamp: epochMs(e.timestamp) ?? receivedAt,
    ...releaseAndEnvironment(e),
  };
  const eventId = text(f.associated_event_id, 128);
  const name = text(f.name, 256);
  const email = text(f.contact_email, 256);
  const url = text(f.url, 2048) ?? text(obj(e.request)?.url, 2048);
  if (eventId) out.eventId = eventId;
  if (name) out.name = name;
  if (email) out.email = email;
  if (url) out.url = url;
  return out;
}
