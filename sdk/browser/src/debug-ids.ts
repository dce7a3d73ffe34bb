/**
 * Debug ids (issue 37): a bundler plugin or `sentry-cli sourcemaps inject` puts a snippet in each bundle that stores
 * `new Error().stack` in `globalThis._sentryDebugIds` (`_debugIds` for native debug ids) with the bundle's debug id.
 * The bundle is the file of that stack's top frame, as @sentry/core's getFilenameToDebugIdMap reads it (native ids
 * win for the same file). The file -> id table is kept and rebuilt only when the number of keys changes (a bundle
 * loaded). An event sends the ids of the files its own stack names, at most 100 (the edge's bound), so the service
 * finds each file's source map with no release. Frames are read as the service's stack parser reads them. Small on
 * purpose: this is in cx.js (ingest/widget-assets.test.ts holds it to its size budget).
 */
type Ids = Record<string, string>;

/** A frame line's file: V8 `at fn (file:l:c)` / `at file:l:c`, Firefox and Safari `fn@file:l:c`. */
const FRAME = /^\s*(?:at\s+(?:.+?\s+\()?|[^@]*@)(.+?)(?::\d+)?(?::\d+)?\)?\s*$/;

/** The file of each frame of a stack, top first. */
export const stackFiles = (stack: string): string[] =>
  stack
    .split('\n')
    .map((line) => (FRAME.exec(line) || [])[1]!)
    .filter(Boolean);

let byFile: Ids = {};
let counted: string;

/** The bundles' file -> debug id, rebuilt when the number of keys changes. */
function files(): Ids {
  const g = globalThis as unknown as Record<string, Ids | undefined>;
  const maps = [g._sentryDebugIds || {}, g._debugIds || {}];
  const count = maps.map((m) => Object.keys(m).length).join();
  if (count !== counted) {
    counted = count;
    byFile = {};
    for (const m of maps)
      for (const key of Object.keys(m)) {
        const file = stackFiles(key)[0];
        if (file && typeof m[key] === 'string') byFile[file] = m[key]!;
      }
  }
  return byFile;
}

/** The debug ids of the files `stack` names (at most 100), or undefined when none has one. */
export function debugIdsOf(stack: string): Ids | undefined {
  const all = files();
  let out: Ids | undefined;
  for (const f of stackFiles(stack)) if (all.hasOwnProperty(f) && Object.keys((out = out || {})).length < 100) out[f] = all[f]!;
  return out;
}
