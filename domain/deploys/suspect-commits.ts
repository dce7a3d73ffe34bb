import type { SymbolicatedFrame } from '../../schemas/symbolicated-frame.ts';

/**
 * Suspect commits (issue 41): of the commits a deploy brought (recorded by the builder, builder/commits/), those that
 * touched the file of an issue's first in-app frame. A frame names a file as the client saw it: a checkout path
 * (`src/app.ts`), a URL (`https://site/assets/app.js`), or, once a source map resolved it, the original source
 * (`webpack://app/./src/app.ts`, `../src/app.ts`). It matches a repository path when, reduced to its path segments,
 * one ends with the other on whole segments (`/assets/app.js` matches `public/assets/app.js`, never `xapp.js`).
 */
export interface DeployCommit {
  sha: string;
  /** The author's name only. */
  author: string;
  /** Commit time, ISO 8601. */
  committedAt: string;
  subject: string;
  /** Repository paths it touched, at most the builder's bound. */
  files: string[];
  /** More files were touched than kept. */
  filesCut: boolean;
}

/** The file of the first in-app frame, its original path when a source map resolved it. */
export function firstInAppFile(frames: readonly SymbolicatedFrame[] | null | undefined): string | undefined {
  // Frames are stored in the stack's order, the throwing frame first (processor/errors/stack-parser.ts).
  const f = (frames ?? []).find((x) => x.inApp);
  return f ? (f.original ?? f.minified).file || undefined : undefined;
}

/**
 * The file of an issue's culprit (`fn (file:line:col)` or `file:line:col`, processor/errors/stack-parser.ts formatFrame):
 * its first in-app frame when no sample carries symbolicated frames (no source map was looked for or found).
 */
export function culpritFile(culprit: string | null | undefined): string | undefined {
  if (!culprit) return undefined;
  const inParens = /\(([^()]*)\)\s*$/.exec(culprit);
  const loc = (inParens ? inParens[1]! : culprit).trim();
  const file = loc.replace(/(:\d+){1,2}$/, '');
  return file || undefined;
}

/** The path segments of a frame's file or a repository path: scheme, host, query, `.` and `..` left out. */
export function pathSegments(file: string): string[] {
  let p = file.trim().replace(/\\/g, '/');
  // webpack://app/./src/a.ts -> ./src/a.ts's segments; https://host/x -> /x
  const scheme = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(p);
  if (scheme) p = p.slice(scheme[0].length);
  p = p.replace(/[?#].*$/, '');
  return p.split('/').filter((s) => s !== '' && s !== '.' && s !== '..' && s !== '~');
}

/** Whether two paths name the same file: the shorter is a whole-segment suffix of the longer. */
export function samePathBySuffix(a: string, b: string): boolean {
  const x = pathSegments(a);
  const y = pathSegments(b);
  if (!x.length || !y.length) return false;
  const [short, long] = x.length <= y.length ? [x, y] : [y, x];
  const off = long.length - short.length;
  return short.every((s, i) => s === long[off + i]);
}

/** The commits that touched `file` (newest first, as recorded), with the repository paths that matched. */
export function suspectCommits(commits: readonly DeployCommit[], file: string | undefined): Array<DeployCommit & { matched: string[] }> {
  if (!file) return [];
  const out: Array<DeployCommit & { matched: string[] }> = [];
  for (const c of commits) {
    const matched = c.files.filter((f) => samePathBySuffix(f, file));
    if (matched.length) out.push({ ...c, matched });
  }
  return out;
}
