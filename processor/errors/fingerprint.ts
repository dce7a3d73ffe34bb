import { createHash } from 'node:crypto';
import { firstInAppFrame, normalizeFrameFile, parseStack, type StackFrame } from './stack-parser.ts';

/**
 * Issue identity (spec §2.6): error name + message with variable parts stripped + the first in-app
 * frame (function and file, never line or column, which move with every edit). So messages that
 * differ only in numbers, ids or uuids are one issue.
 */
export function normalizeMessage(message: string): string {
  return message
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>')
    .replace(/\b0x[0-9a-f]+\b/gi, '<hex>')
    .replace(/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/gi, '<hex>')
    .replace(/\d+(?:\.\d+)?/g, '<n>')
    .replace(/\s+/g, ' ')
    .trim();
}

export interface Fingerprint {
  fingerprint: string;
  frames: StackFrame[];
  inAppFrame?: StackFrame;
}

export function computeFingerprint(name: string, message: string, stack: string): Fingerprint {
  const frames = parseStack(stack);
  const inAppFrame = firstInAppFrame(frames);
  const frameKey = inAppFrame ? `${inAppFrame.fn}@${normalizeFrameFile(inAppFrame.file)}` : '';
  const fingerprint = createHash('sha256').update(`${name}\n${normalizeMessage(message)}\n${frameKey}`).digest('hex');
  return { fingerprint, frames, inAppFrame };
}

/**
 * Deterministic group id, so the occurrence rows can carry it before the group row exists and a
 * re-delivery computes the same one.
 */
export function groupIdFor(projectId: string, fingerprint: string): string {
  return 'grp_' + createHash('sha256').update(`${projectId}:${fingerprint}`).digest('hex').slice(0, 24);
}
