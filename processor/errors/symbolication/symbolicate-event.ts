import type { ContextLines, FramePosition, SymbolicatedFrame, UnresolvedReason } from '../../../schemas/symbolicated-frame.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { isInAppFrame, parseFrameLine, type StackFrame } from '../stack-parser.ts';
import { KNOWN_SDK_FUNCTION } from '../../../schemas/known-sdk-files.ts';
import type { ChosenMap } from './map-choice.ts';
import { originalPosition, sourceLines, type OriginalPosition, type ParsedMap } from './parsed-maps.ts';

/**
 * One event's stack through its maps (issue 37): each of its first LIMITS.sourceMaps.framesPerEvent frames gets its
 * original file, line, column and function, and context lines from the map's `sourcesContent`; the stack is rewritten
 * with the original frames (V8's `    at fn (file:line:col)`), so the fingerprint, the culprit, issue samples and alert
 * mail all read the source. Lines that are no frame (the message header) and frames that stay minified keep their text.
 *
 * A function's original name is the name the map gives the call in the frame below (the caller names its callee,
 * which is how a minified `r` becomes `handleClick`); the outermost frame has none. A frame the map resolves without
 * a name is anonymous rather than its minified name, so the issue's identity never holds a name that moves with a
 * deploy.
 */
export type FrameMap = { chosen: ChosenMap; map: ParsedMap | 'busy' } | { unresolved: UnresolvedReason };

export interface Symbolicated {
  stack: string;
  minifiedStack: string;
  frames: SymbolicatedFrame[];
  /** How many frames resolved, and how many did not by reason. */
  resolved: number;
  unresolved: Partial<Record<UnresolvedReason, number>>;
}

const L = LIMITS.sourceMaps;

/**
 * `mapOf` says which map resolves a frame (or why none does); undefined when no frame of the stack had a map to try
 * (nothing changes then).
 */
export function symbolicateEvent(
  stack: string,
  mapOf: (frame: StackFrame) => FrameMap,
  scrubLine: (line: string) => string = (l) => l,
): Symbolicated | undefined {
  const lines = stack.split('\n');
  type Slot = { lineIndex: number; frame: StackFrame; fm: FrameMap; pos?: OriginalPosition };
  const slots: Slot[] = [];
  for (let i = 0; i < lines.length && slots.length < L.framesPerEvent; i++) {
    const frame = parseFrameLine(lines[i]!);
    if (frame) slots.push({ lineIndex: i, frame, fm: mapOf(frame) });
  }
  if (!slots.some((s) => 'chosen' in s.fm)) return undefined;

  const out: Symbolicated = { stack: '', minifiedStack: stack, frames: [], resolved: 0, unresolved: {} };
  const reasonOf = (s: Slot): UnresolvedReason | undefined => {
    if ('unresolved' in s.fm) return s.fm.unresolved;
    if (s.fm.map === 'busy') return 'busy';
    if (s.fm.map.kind === 'refused') return 'map_refused';
    if (s.frame.line === undefined) return 'line_out_of_range';
    s.pos = originalPosition(s.fm.map, s.frame.line, Math.max(0, (s.frame.col ?? 1) - 1));
    return s.pos ? undefined : 'line_out_of_range';
  };
  const reasons = slots.map(reasonOf);

  slots.forEach((s, i) => {
    const minified: FramePosition = { fn: s.frame.fn, file: s.frame.file, line: s.frame.line, col: s.frame.col };
    const reason = reasons[i];
    if (reason || !s.pos || !('chosen' in s.fm) || s.fm.map === 'busy' || s.fm.map.kind !== 'ok') {
      out.unresolved[reason ?? 'line_out_of_range'] = (out.unresolved[reason ?? 'line_out_of_range'] ?? 0) + 1;
      out.frames.push({ minified, inApp: s.frame.inApp, resolution: { status: 'unresolved', reason: reason ?? 'line_out_of_range' } });
      return;
    }
    const caller = slots[i + 1];
    const fn = caller?.pos && caller.fm && 'chosen' in caller.fm ? (caller.pos.name ?? '') : '';
    const file = cleanSourcePath(s.pos.source);
    const original: FramePosition = { fn, file, line: s.pos.line, col: s.pos.column + 1 };
    const { ref, match } = s.fm.chosen;
    const frame: SymbolicatedFrame = {
      minified,
      original,
      inApp: isInAppFrame(fn, file) && !(s.frame.fn && KNOWN_SDK_FUNCTION.test(s.frame.fn)),
      resolution: {
        status: 'resolved',
        match,
        deployId: ref.deployId,
        ...(ref.bundleId ? { bundleId: ref.bundleId } : {}),
        mapName: ref.mapName,
        ...(ref.debugId ? { debugId: ref.debugId } : {}),
      },
    };
    const context = contextOf(s.fm.map, s.pos, scrubLine);
    if (context) frame.context = context;
    out.frames.push(frame);
    out.resolved++;
    lines[s.lineIndex] = `    at ${fn ? `${fn} (${file}:${original.line}:${original.col})` : `${file}:${original.line}:${original.col}`}`;
  });
  out.stack = lines.join('\n');
  return out;
}

/**
 * A map's source as people read it: `webpack://app/./src/App.tsx` -> `src/App.tsx`, `../src/main.ts` -> `src/main.ts`;
 * the bundler's prefixes and the climb out of the output directory say nothing about the code.
 */
export function cleanSourcePath(source: string): string {
  let s = source.replace(/^webpack:\/\/[^/]*\//, '').replace(/^(?:file|vite|rollup):\/\/+/, '/');
  s = s.replace(/^(?:\.\.?\/)+/, '');
  s = s.replace(/\/(?:\.\/)+/g, '/');
  return s.slice(0, 1024) || source.slice(0, 1024);
}

/**
 * A frame's context lines, scrubbed, kept per map by source and line (and column, when a line is long enough to be cut
 * around it): errors thrown at one line share them, and their scrub runs once.
 */
function contextOf(map: Extract<ParsedMap, { kind: 'ok' }>, pos: OriginalPosition, scrubLine: (line: string) => string): ContextLines | undefined {
  const lines = sourceLines(map, pos.source);
  if (!lines || pos.line > lines.length) return undefined;
  let long = false;
  for (let i = Math.max(1, pos.line - L.contextLines); i <= Math.min(lines.length, pos.line + L.contextLines); i++)
    long ||= lines[i - 1]!.length > L.contextLineChars;
  const key = `${pos.source}\u0000${pos.line}${long ? `\u0000${pos.column}` : ''}`;
  let context = map.contexts.get(key);
  if (!context) {
    context = contextLines(lines, pos.line, pos.column)!;
    context.lines = context.lines.map(scrubLine);
    if (map.contexts.size >= CONTEXTS_PER_MAP) map.contexts.clear();
    map.contexts.set(key, context);
  }
  return context;
}
const CONTEXTS_PER_MAP = 500;

/** Up to LIMITS.sourceMaps.contextLines lines either side of `line` (1-based), each cut around `column`. */
function contextLines(lines: string[] | undefined, line: number, column: number): ContextLines | undefined {
  if (!lines || line > lines.length) return undefined;
  const first = Math.max(1, line - L.contextLines);
  const last = Math.min(lines.length, line + L.contextLines);
  const cut = (text: string) => {
    if (text.length <= L.contextLineChars) return text;
    const start = Math.max(0, Math.min(column - L.contextLineChars / 2, text.length - L.contextLineChars));
    return text.slice(start, start + L.contextLineChars);
  };
  return { firstLine: first, lines: lines.slice(first - 1, last).map(cut), errorIndex: line - first };
}
