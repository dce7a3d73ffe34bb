import { scrubText, scrubValue } from '../../../domain/secret-scrub.ts';
import type { StampedAnalyticsEvent } from '../../../schemas/analytics-event.ts';

/**
 * Secrets never reach a store: property values that look like secrets are replaced inside the text, keys named like
 * secrets are filtered whole (domain/secret-scrub.ts, the scrubber errors use), and so are the free-text fields.
 */
export function scrubStep(e: StampedAnalyticsEvent): StampedAnalyticsEvent {
  const out: StampedAnalyticsEvent = { ...e, properties: scrubValue(e.properties) as Record<string, unknown> };
  if (e.path !== undefined) out.path = scrubText(e.path);
  return out;
}
