import { ERROR_EVENT_TEXT_FIELDS, ERROR_EVENT_TEXT_FIELD_NAMES, type StampedErrorEvent } from '../../../schemas/error-event.ts';
import { scrubText, scrubValue } from '../scrub.ts';
import { ok, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** The text fields the scrubber reads (schemas/error-event.ts says which), besides name, message, stack and extra. */
const SCRUBBED = ERROR_EVENT_TEXT_FIELD_NAMES.map((f) => [f, ERROR_EVENT_TEXT_FIELDS[f].scrubbed] as const);

/** Scrub secrets out of every free-text field before any later step (or store) sees the event. */
export function createScrubStep() {
  return function scrubStep(input: IncomingEvent): StepOutcome<IncomingEvent> {
    const e = input.event;
    // Every key set in one fixed order, not spread: one object shape for every event (a spread is several
    // times slower here).
    const event = { eventId: e.eventId, name: scrubText(e.name), message: scrubText(e.message), stack: scrubText(e.stack) } as StampedErrorEvent;
    for (const [f, scrubbed] of SCRUBBED) {
      const v = e[f];
      event[f] = v !== undefined && scrubbed ? scrubText(v) : v;
    }
    event.extra = e.extra === undefined ? undefined : (scrubValue(e.extra) as Record<string, unknown>);
    event.clientTime = e.clientTime;
    event.runtime = e.runtime;
    event.truncated = e.truncated;
    return ok({ projectId: input.projectId, originHost: input.originHost, receivedAt: input.receivedAt, event });
  };
}
