import { KNOWN_SDK_FILE, KNOWN_SDK_FUNCTION } from '../../schemas/known-sdk-files.ts';
/**
 * A stack trace as frames, each marked in-app or library, for the issue page. The rule is the one a person
 * triaging uses: code under node_modules, Node's own modules, bundled vendor chunks and the browser's native
 * frames are libraries; the rest is the app's own code. V8 (`at fn (file:1:2)`) and Firefox/Safari
 * (`fn@file:1:2`) lines are read; any other line is kept as text.
 */
export interface Frame {
  raw: string;
  fn: string | null;
  file: string | null;
  line: number | null;
  column: number | null;
  inApp: boolean;
}

export interface ParsedStack {
  /** The lines before the first frame (usually `Name: message`). */
  header: string[];
  frames: Frame[];
}

const V8 = /^\s*at (?:(.+?) \()?(.+?)(?::(\d+))?(?::(\d+))?\)?$/;
const GECKO = /^\s*([^@\s]*)@(\S+?):(\d+):(\d+)$/;
const LIBRARY =
  /^index \d+$|(^|[\/\\])node_modules[\/\\]|^node:|^internal[\/\\]|^<anonymous>$|^native$|\[native code\]|[\/\\]vendor[-.~\w]*\.js|^(?:webpack|vite)\/(?:runtime|bootstrap)/;

/** `fn`: a frame named as one of an error SDK's wrappers (`sentryWrapped`, ...) is the SDK's, in whatever file. */
export function isInApp(file: string | null, fn?: string | null): boolean {
  if (!file || (fn && KNOWN_SDK_FUNCTION.test(fn))) return false;
  return !LIBRARY.test(file) && !KNOWN_SDK_FILE.test(file.toLowerCase().replace(/[?#].*$/, ''));
}

export function parseStack(stack: string): ParsedStack {
  const header: string[] = [];
  const frames: Frame[] = [];
  for (const raw of stack.split('\n')) {
    if (!raw.trim()) continue;
    const m = (/^\s*at /.test(raw) ? V8.exec(raw) : null) ?? GECKO.exec(raw);
    if (!m) {
      if (frames.length === 0) header.push(raw);
      else frames.push({ raw, fn: null, file: null, line: null, column: null, inApp: false });
      continue;
    }
    const file = m[2] ?? null;
    frames.push({ raw, fn: m[1] || null, file, line: m[3] ? Number(m[3]) : null, column: m[4] ? Number(m[4]) : null, inApp: isInApp(file, m[1]) });
  }
  return { header, frames };
}

/** Consecutive frames of the same kind, so runs of library frames can be folded. */
export function runs<F extends { inApp: boolean }>(frames: F[]): Array<{ inApp: boolean; frames: F[] }> {
  const out: Array<{ inApp: boolean; frames: F[] }> = [];
  for (const f of frames) {
    const last = out[out.length - 1];
    if (last && last.inApp === f.inApp) last.frames.push(f);
    else out.push({ inApp: f.inApp, frames: [f] });
  }
  return out;
}
