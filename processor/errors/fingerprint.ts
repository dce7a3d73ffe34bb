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
  const frameKey = inAppFrame ? `${inAppFrame.fn}@${stripContentHashes(normalizeFrameFile(inAppFrame.file))}` : '';
  const fingerprint = hash('sha256', `${name}\n${normalizeMessage(message)}\n${frameKey}`, 'hex');
  return { fingerprint, inAppFrame };
}

/**
 * A bundler's content hashes taken out of a file's path, so the file part of the identity survives a deploy:
 * `index-3f9a2c1b.js` and `index-8e1d7f0a.js` (Vite, esbuild's `[name]-[hash]`), `main.8e1d7f0a.chunk.js` (webpack),
 * `4PKGQX7N.js` and Next.js's build-id folders all become `[hash]` where the hash was. A hash is a token of 8 or more
 * letters, digits and `_` between `/`, `-` and `.` with a digit, or only capitals, or both cases unlike a camelCase
 * word: a bundler's base32, base64url or hex, never a word such as `polyfills` or `UserProfile`. What still moves with a deploy
 * is a minified function name (README: Sending errors); a source map makes the frame its original.
 */
export function stripContentHashes(file: string): string {
  return file
    .replace(VITE_NAME, (whole, name: string, hash: string, ext: string) => (looksLikeHash(hash.replace(/[-_]/g, '')) ? `${name}-[hash]${ext}` : whole))
    .replace(HASH_TOKEN, (token) => (looksLikeHash(token) ? '[hash]' : token));
}

/** Vite's and Rollup's `[name]-[hash]`: eight base64url characters, which may hold `-` and `_` themselves. */
const VITE_NAME = /(?<=^|\/)([^/]+)-([A-Za-z0-9_-]{8})(\.[A-Za-z0-9.]+)$/;
const HASH_TOKEN = /(?<=^|[/.-])[A-Za-z0-9_]{8,}(?=$|[/.-])/g;

function looksLikeHash(token: string): boolean {
  // A date (20261126) is a name; a millisecond timestamp or a number of 12+ digits is a build's.
  if (/^\d+$/.test(token)) return token.length >= 12;
  if (/\d/.test(token)) return true;
  if (!/[A-Z]/.test(token)) return false;
  if (!/[a-z]/.test(token)) return true;
  // Mixed case without a digit: a camelCase or PascalCase word has every capital followed by lowercase letters.
  return !/^_*[a-z]*(?:[A-Z][a-z]{2,})+$/.test(token);
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
