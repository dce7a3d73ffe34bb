import type { SymbolicatedFrame } from '../../schemas/api/errors.ts';
import { UNRESOLVED_REASON_TEXT } from '../../schemas/frame-resolution-text.ts';

/**
 * The issue page's symbolicated frames (issue 37), as words and rows, kept apart from the components so they are
 * tested alone. A frame reads as its original position when a source map resolved it, or as the client sent it
 * (`minified`, the toggle); each says which deploy's map resolved it or why none did.
 */
export type FrameMode = 'original' | 'minified';
type Position = SymbolicatedFrame['minified'];

/** The position shown in this mode: the original where there is one, else the frame as sent. */
export function positionOf(f: SymbolicatedFrame, mode: FrameMode): Position {
  return mode === 'original' && f.original ? f.original : f.minified;
}

/** `:14:27`, `:14`, or nothing. */
export function lineCol(p: Position): string {
  if (p.line === undefined) return '';
  return `:${p.line}${p.col !== undefined ? `:${p.col}` : ''}`;
}

export const functionName = (p: Position) => p.fn || '<anonymous>';

const MATCH_TEXT = {
  debug_id: 'matched by debug ID',
  deploy: 'from the deploy that served the file',
  path: 'matched by served path',
} as const;

/** What a frame's note says: which map resolved it (and its deploy, or an upload), or why it stayed minified. */
export type ResolutionNote = { resolved: true; mapName: string; deployId: string | null; how: string } | { resolved: false; why: string };

export function resolutionNote(f: SymbolicatedFrame): ResolutionNote {
  const r = f.resolution;
  if (r.status === 'resolved') return { resolved: true, mapName: r.mapName, deployId: r.deployId, how: MATCH_TEXT[r.match] ?? '' };
  return { resolved: false, why: UNRESOLVED_REASON_TEXT[r.reason] ?? 'not resolved' };
}

/** A context block's rows: line numbers from `firstLine`, the failing line marked (none when its index is off the block). */
export function contextRows(c: NonNullable<SymbolicatedFrame['context']>): Array<{ number: number; text: string; failing: boolean }> {
  return c.lines.map((text, k) => ({ number: c.firstLine + k, text, failing: k === c.errorIndex }));
}

/** The frame whose source shows at first: the top in-app frame with context lines (Sentry opens the same one). */
export function openFrameIndex(frames: SymbolicatedFrame[]): number {
  return frames.findIndex((f) => f.inApp && f.context && f.context.lines.length > 0);
}

/** `3 of 10 frames resolved by source maps`, or null when none was. */
export function resolvedSummary(frames: SymbolicatedFrame[]): string | null {
  const resolved = frames.filter((f) => f.resolution.status === 'resolved').length;
  if (!resolved) return null;
  return `${resolved} of ${frames.length} ${frames.length === 1 ? 'frame' : 'frames'} resolved by source maps`;
}

/** `dep_64258b37…`: a deploy id short enough to sit beside a frame (the link carries the whole id). */
export const shortId = (id: string) => (id.length > 14 ? `${id.slice(0, 12)}…` : id);
