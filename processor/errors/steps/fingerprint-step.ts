import { computeFingerprint, groupIdFor } from '../fingerprint.ts';
import { ok, type FingerprintedEvent, type IncomingEvent, type StepOutcome } from './outcome.ts';

/** Issue identity (spec §2.6) and the deterministic group id derived from it. */
export function createFingerprintStep() {
  return function fingerprintStep(input: IncomingEvent): StepOutcome<FingerprintedEvent> {
    const { fingerprint, inAppFrame } = computeFingerprint(input.event.name, input.event.message, input.event.stack);
    return ok({ ...input, fingerprint, inAppFrame, groupId: groupIdFor(input.projectId, fingerprint) });
  };
}
