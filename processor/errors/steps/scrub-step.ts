import type { StampedErrorEvent } from '../../../schemas/error-event.ts';
import { scrubText, scrubValue } from '../scrub.ts';
import { ok, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** Scrub secrets out of every free-text field before any later step (or store) sees the event. */
export function createScrubStep() {
  return function scrubStep(input: IncomingEvent): StepOutcome<IncomingEvent> {
    const e = input.event;
    // Written out, not spread: one object shape for every event (a spread is several times slower here).
    const event: StampedErrorEvent = {
      eventId: e.eventId,
      name: scrubText(e.name),
      message: scrubText(e.message),
      stack: scrubText(e.stack),
      path: e.path === undefined ? undefined : scrubText(e.path),
      distinctId: e.distinctId,
      userId: e.userId,
      sessionId: e.sessionId,
      deployId: e.deployId,
      gitSha: e.gitSha,
      extra: e.extra === undefined ? undefined : (scrubValue(e.extra) as Record<string, unknown>),
      clientTime: e.clientTime,
      runtime: e.runtime,
      truncated: e.truncated,
    };
    return ok({ projectId: input.projectId, originHost: input.originHost, receivedAt: input.receivedAt, event });
  };
}
