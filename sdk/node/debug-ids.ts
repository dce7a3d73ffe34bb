/**
 * Debug ids (issue 37): a bundler plugin or `sentry-cli sourcemaps inject` puts a snippet in each bundle that stores
 * `new Error().stack` in `globalThis._sentryDebugIds` (`_debugIds` for native debug ids) with the bundle's debug id.
 * The bundle is the file of that stack's top frame, as @sentry/core's getFilenameToDebugIdMap reads it (native ids
 * win for the same file). The file -> id table is kept and rebuilt only when the number of keys changes (a bundle
 * loaded). An event sends the ids of the files its own stack names, at most 100 (the edge's bound), so the service
 * finds each file's source map with no release. Frames are read as the service's stack parser reads them (the same
 * rule as the browser client's sdk/browser/src/debug-ids.ts).
 */
type Ids = Record<string, string>;

/** A frame line's file: V8 `at fn (file:l:c)` / `at file:l:c`, Firefox and Safari `fn@file:l:c`. */
const FRAME = /^\s*(?:at\s+(?:.+?\s+\()?|[^@]*@)(.+?)(?::\d+)?(?::\d+)?\)?\s*$/;
const MAX_IDS = 100;

/** The file of each frame of a stack, top first. */
export function stackFiles(stack: string): string[] {
  const files: string[] = [];
  for (const line of stack.split('\n')) {
    const file = FRAME.exec(line)?.[1];
    if (file) files.push(file);
  }
  return files;
}

let byFile = new Map<string, string>();
let counted: string | undefined;

/** The bundles' file -> debug id, rebuilt when the number of keys changes. */
function bundleDebugIds(): Map<string, string> {
  const g = globalThis as unknown as { _sentryDebugIds?: Record<string, unknown>; _debugIds?: Record<string, unknown> };
  const maps = [g._sentryDebugIds ?? {}, g._debugIds ?? {}];
  const keys = maps.map((m) => Object.keys(m));
  const count = keys.map((k) => k.length).join();
  if (count === counted) return byFile;
  counted = count;
  byFile = new Map();
  maps.forEach((m, i) => {
    for (const key of keys[i]!) {
      const file = stackFiles(key)[0];
      const id = m[key];
      if (file && typeof id === 'string') byFile.set(file, id);
    }
  });
  return byFile;
}

/** The debug ids of the files `stack` names (at most 100), or undefined when none has one. */
export function debugIdsOf(stack: string): Ids | undefined {
  const all = bundleDebugIds();
  if (!all.size) return undefined;
  let out: Ids | undefined;
  let n = 0;
  for (const file of stackFiles(stack)) {
    const id = all.get(file);
    if (id === undefined || (out && Object.hasOwn(out, file))) continue;
    if (n++ === MAX_IDS) break;
    out ??= {};
    out[file] = id;
  }
  return out;
}
