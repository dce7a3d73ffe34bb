import { scrubText, scrubValue } from '../scrub.ts';
import { ok, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** Scrub secrets out of every free-text field before any later step (or store) sees the event. */
export function createScrubStep() {
  return function scrubStep(input: IncomingEvent): StepOutcome<IncomingEvent> {
    const e = input.event;
    const text = (v: string | undefined) => (v === undefined ? undefined : scrubText(v));
    return ok({
      ...input,
      event: {
        ...e,
        name: scrubText(e.name),
        message: scrubText(e.message),
        stack: scrubText(e.stack),
        path: text(e.path),
        extra: e.extra === undefined ? undefined : (scrubValue(e.extra) as Record<string, unknown>),
      },
    });
  };
}
