import { copyTextFields, ERROR_EVENT_TEXT_FIELDS, ERROR_EVENT_TEXT_FIELD_NAMES, type StampedErrorEvent } from '../../../schemas/error-event.ts';
import { scrubText, scrubValue } from '../../../domain/secret-scrub.ts';
import { ok, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** The text fields the scrubber reads (schemas/error-event.ts says which), besides name, message, stack and extra. */
const SCRUBBED = ERROR_EVENT_TEXT_FIELD_NAMES.filter((f) => ERROR_EVENT_TEXT_FIELDS[f].scrubbed);

/** Scrub secrets out of every free-text field before any later step (or store) sees the event. */
export function createScrubStep() {
  return function scrubStep(input: IncomingEvent): StepOutcome<IncomingEvent> {
    const e = input.event;
    // Every key set in one fixed order, not spread: one object shape for every event (a spread is several
    // times slower here).
    const event = { eventId: e.eventId, name: scrubText(e.name), message: scrubText(e.message), stack: scrubText(e.stack) } as StampedErrorEvent;
    copyTextFields(e, event as unknown as Record<string, unknown>);
    for (const f of SCRUBBED) {
      const v = event[f];
      if (v !== undefined) event[f] = scrubText(v);
    }
    event.extra = e.extra === undefined ? undefined : (scrubValue(e.extra) as Record<string, unknown>);
    event.clientTime = e.clientTime;
    event.runtime = e.runtime;
    event.truncated = e.truncated;
    // Ids, not text: the symbolication step reads them (issue 37).
    if (e.debugIds !== undefined) event.debugIds = e.debugIds;
    return ok({ projectId: input.projectId, originHost: input.originHost, receivedAt: input.receivedAt, event });
  };
}
