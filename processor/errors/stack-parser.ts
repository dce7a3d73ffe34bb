import { KNOWN_SDK_FILE, KNOWN_SDK_FUNCTION } from '../../schemas/known-sdk-files.ts';
/**
 * Stack trace parsing for the two formats browsers and Node produce:
 * V8 (Chrome, Edge, Node): `    at fn (file:line:col)`, `    at file:line:col`, `    at async fn (...)`;
 * Firefox and Safari: `fn@file:line:col`, `@file:line:col`, `[native code]`.
 * A frame is in-app unless it is library, runtime or our own browser client code: those never
 * decide which issue an error belongs to.
 */
export interface StackFrame {
  /** Function name as printed ('' when anonymous). */
  fn: string;
  file: string;
  line?: number;
  col?: number;
  inApp: boolean;
}

const V8_FRAME = /^\s*at\s+(?:(.+?)\s+\()?(.+?)(?::(\d+))?(?::(\d+))?\)?\s*$/;
const GECKO_FRAME = /^\s*([^@]*)@(.+?)(?::(\d+))?(?::(\d+))?\s*$/;
const V8_START = /^\s*at\s/;
const NATIVE_CODE = /^\s*\[native code\]\s*$/;

export function parseStack(stack: string): StackFrame[] {
  return [...stackFrames(stack)];
}

/** The frames of `stack`, top first, parsed one line at a time as they are asked for. */
export function* stackFrames(stack: string): Generator<StackFrame> {
  // Line by line without splitting the whole stack: callers usually stop at the first in-app frame.
  for (let start = 0; start <= stack.length; ) {
    let end = stack.indexOf('\n', start);
    if (end === -1) end = stack.length;
    const line = stack.slice(start, end);
    start = end + 1;
    const f = parseFrameLine(line);
    if (f) yield f;
  }
}

/** One line of a stack as a frame, or undefined for the message header ("TypeError: ...") or prose. */
export function parseFrameLine(untrimmed: string): StackFrame | undefined {
  const line = untrimmed.trimEnd();
  if (!line.trim()) return undefined;
  let m: RegExpExecArray | null;
  const v8 = V8_START.test(line);
  if (v8 && (m = V8_FRAME.exec(line))) {
    const fn = (m[1] ?? '').replace(/^async\s+/, '');
    return frame(fn, m[2] ?? '', m[3], m[4]);
  }
  if (!v8 && line.includes('@') && (m = GECKO_FRAME.exec(line))) return frame(m[1] ?? '', m[2] ?? '', m[3], m[4]);
  if (NATIVE_CODE.test(line)) return frame('', '[native code]', undefined, undefined);
  return undefined;
}

function frame(fn: string, file: string, line: string | undefined, col: string | undefined): StackFrame {
  const f: StackFrame = { fn: fn.trim(), file: file.trim(), inApp: false };
  if (line) f.line = Number(line);
  if (col) f.col = Number(col);
  f.inApp = isInAppFrame(f.fn, f.file);
  return f;
}

/** isInAppFile, and the function is none of an error SDK's wrappers (`sentryWrapped`, ...: KNOWN_SDK_FUNCTION). */
export function isInAppFrame(fn: string, file: string): boolean {
  return isInAppFile(file) && !(fn && KNOWN_SDK_FUNCTION.test(fn));
}

const EXTENSION_SCHEMES = /^(?:chrome|moz|safari|safari-web|ms-browser)-extension:\/\//i;

/** False for libraries, runtime internals, extensions, anonymous/native code and our browser client. */
export function isInAppFile(file: string): boolean {
  if (!file) return false;
  const f = file.toLowerCase();
  if (f.includes('node_modules/') || f.includes('node_modules\\')) return false;
  // A bundler's own runtime, as a source map names it (webpack's chunk loading, Vite's preload helper).
  if (f.includes('webpack/runtime/') || f.includes('webpack/bootstrap') || f.startsWith('\0') || f.includes('vite/preload-helper')) return false;
  if (f.startsWith('node:') || f.startsWith('internal/') || f.includes('(internal/')) return false;
  if (EXTENSION_SCHEMES.test(f)) return false;
  if (f.includes('<anonymous>') || f === 'native' || f.includes('[native code]') || f === 'unknown location') return false;
  if (f.startsWith('eval at ') || f === 'eval code' || /^index \d+$/.test(f)) return false;
  const pathOnly = stripQuery(f);
  // Error-reporting SDKs (Sentry's, PostHog's, our cx.js), however they are served: their frames are never the culprit.
  if (KNOWN_SDK_FILE.test(pathOnly) || pathOnly.includes('/service/cx')) return false;
  return true;
}

/** First frame that is application code, or undefined. */
export function firstInAppFrame(frames: Iterable<StackFrame>): StackFrame | undefined {
  for (const f of frames) if (f.inApp) return f;
  return undefined;
}

function stripQuery(file: string): string {
  return file.replace(/[?#].*$/, '');
}

/**
 * The frame's file as it identifies code: query and hash dropped, and for URLs only the path, so a
 * script served from the production and the preview host is the same file.
 */
export function normalizeFrameFile(file: string): string {
  const noQuery = stripQuery(file);
  const url = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/.*)?$/i.exec(noQuery);
  if (url && !noQuery.startsWith('file://')) return url[1] ?? '/';
  return noQuery;
}

/** "fn (file:line:col)" for display in issues and alert mail. */
export function formatFrame(f: StackFrame): string {
  let loc = f.file;
  if (f.line !== undefined) loc = loc === '' ? String(f.line) : `${loc}:${f.line}`;
  if (f.col !== undefined) loc = loc === '' ? String(f.col) : `${loc}:${f.col}`;
  return f.fn ? `${f.fn} (${loc})` : loc;
}
