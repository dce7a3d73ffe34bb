import { computeFingerprint, groupIdFor } from '../fingerprint.ts';
import { ok, type FingerprintedEvent, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** Issue identity (spec §2.6) and the deterministic group id derived from it. */
export function createFingerprintStep() {
  return function fingerprintStep(input: IncomingEvent): StepOutcome<FingerprintedEvent> {
    const { fingerprint, inAppFrame } = computeFingerprint(input.event.name, input.event.message, input.event.stack);
    // Written out, not spread: one object shape for every event (a spread is several times slower here).
    const out: FingerprintedEvent = {
      projectId: input.projectId,
      originHost: input.originHost,
      receivedAt: input.receivedAt,
      event: input.event,
      fingerprint,
      groupId: groupIdFor(input.projectId, fingerprint),
      inAppFrame,
    };
    return ok(out);
  };
}
