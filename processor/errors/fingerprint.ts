import { hash } from 'node:crypto';
import { firstInAppFrame, normalizeFrameFile, stackFrames, type StackFrame } from './stack-parser.ts';

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
  inAppFrame?: StackFrame;
}

export function computeFingerprint(name: string, message: string, stack: string): Fingerprint {
  // Frames are parsed only down to the first in-app one: nothing below it changes the identity.
  const inAppFrame = firstInAppFrame(stackFrames(stack));
  const frameKey = inAppFrame ? `${inAppFrame.fn}@${normalizeFrameFile(inAppFrame.file)}` : '';
  const fingerprint = hash('sha256', `${name}\n${normalizeMessage(message)}\n${frameKey}`, 'hex');
  return { fingerprint, inAppFrame };
}

/**
 * Deterministic group id, so the occurrence rows can carry it before the group row exists and a
 * re-delivery computes the same one.
 */
export function groupIdFor(projectId: string, fingerprint: string): string {
  const key = `${projectId}:${fingerprint}`;
  let id = groupIds.get(key);
  if (id === undefined) {
    id = 'grp_' + hash('sha256', key, 'hex').slice(0, 24);
    if (groupIds.size >= GROUP_ID_MEMO) groupIds.clear();
    groupIds.set(key, id);
  }
  return id;
}

/** The ids of recently seen groups, so the hash runs once per group, not once per event. */
const groupIds = new Map<string, string>();
const GROUP_ID_MEMO = 100_000;
