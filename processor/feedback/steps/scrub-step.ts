import { scrubText } from '../../../domain/secret-scrub.ts';
import type { FeedbackItem } from '../../../schemas/bus/client-items.ts';
import { drop, ok, type StepOutcome } from '../../batch-summary.ts';

/**
 * Scrub one feedback item with the rules error events are scrubbed by (domain/secret-scrub.ts, as
 * processor/errors/steps/scrub-step.ts applies them): the message, name, e-mail and page URL lose every secret-looking
 * part to `[Filtered]`. The rules keep an e-mail address (the reporter gave it to be answered) and filter one that
 * looks like a credential; a URL keeps its path but not credentials or secret-named query parameters. A message that
 * is blank is no feedback: dropped as `feedback_empty_message`.
 */
export type ScrubDropReason = 'feedback_empty_message';

export function scrubFeedback(item: FeedbackItem): StepOutcome<FeedbackItem, ScrubDropReason> {
  if (!item.message.trim()) return drop('feedback_empty_message');
  const out: FeedbackItem = { ...item, message: scrubText(item.message) };
  if (item.name !== undefined) out.name = scrubText(item.name);
  if (item.email !== undefined) out.email = scrubText(item.email);
  if (item.url !== undefined) out.url = scrubText(item.url);
  return ok(out);
}
