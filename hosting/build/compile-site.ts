import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { COMPRESS_BUDGET, type CompressBudget, type Encoding, precompress, readArtifactFile } from '../compress/precompress.ts';
import { parseHeaders, type HeaderRule } from '../rules/parse-headers.ts';
import { parseRedirects, type RedirectRule } from '../rules/parse-redirects.ts';
import { type IgnoredLine, REPORTED_LINES_MAX, RULE_FILE_MAX_BYTES } from '../rules/rule-bounds.ts';

/**
 * A ready deploy's output prepared for serving, once, at the end of its build (after the artifact copy):
 *   1. the artifact's files listed (the copy left regular files and directories only), each hashed (sha256: its
 *      strong ETag) with its size;
 *   2. text files compressed beside themselves (compress/precompress.ts), within the deploy's budget;
 *   3. `_redirects` and `_headers` parsed (rules/), bounded; the project's `spa` setting adds `/* /index.html 200`
 *      when no rule of `_redirects` is for `/*`;
 *   4. everything written to `.cx/site.json` in the artifact (SITE_FILE: never served), and the build log told
 *      "N redirect rules, M header rules" with the lines ignored and why (at most REPORTED_LINES_MAX named).
 * A deploy made before this step has no `.cx/site.json`: the server serves it as it always did (no rules, no
 * precompressed files, ETags computed from the bytes it reads). A failure here never fails the deploy: the log says
 * so and the site is served without rules.
 */
export const SITE_DIR = '.cx';
export const SITE_FILE = `${SITE_DIR}/site.json`;

/** `.cx/site.json`: what the server needs of a deploy beyond its files. */
export interface SiteManifest {
  version: 1;
  /** By path relative to the artifact (`/`-separated): a strong ETag (sha256, hex, 32 chars) and the encodings kept beside it. */
  files: Record<string, { etag: string; size: number; enc?: Encoding[] }>;
  redirects: RedirectRule[];
  headers: HeaderRule[];
}

export interface CompileSiteOptions {
  /** The project's `spa` setting: a client-routed app whose every unknown path serves `/index.html`. */
  spa?: boolean;
  /** What the compressed copies may take in all (the room the output quota leaves); unbounded when absent. */
  roomBytes?: number;
  /** The bytes written beside the output (compressed copies and the manifest), told once done, failed or not. */
  written?(bytes: number): void;
  note(text: string): void;
  now?: () => number;
}

export async function compileSite(dir: string, o: CompileSiteOptions): Promise<SiteManifest | undefined> {
  const now = o.now ?? Date.now;
  const budget: CompressBudget = { bytes: COMPRESS_BUDGET.bytes, deadline: now() + COMPRESS_BUDGET.ms, room: o.roomBytes, written: 0 };
  let manifestBytes = 0;
  try {
    const { manifest, bytes } = await compile(dir, o, budget);
    manifestBytes = bytes;
    return manifest;
  } catch (err) {
    o.note(`hosting: the site's rules and compressed files could not be prepared (${(err as Error).message}); it is served without them`);
    await rm(path.join(dir, SITE_DIR), { recursive: true, force: true }).catch(() => undefined);
    return undefined;
  } finally {
    o.written?.(budget.written + manifestBytes);
  }
}

async function compile(dir: string, o: CompileSiteOptions, budget: CompressBudget): Promise<{ manifest: SiteManifest; bytes: number }> {
  // 1. the files
  await rm(path.join(dir, SITE_DIR), { recursive: true, force: true });
  const rels = await listFiles(dir);
  const names = new Set(rels);
  const files: SiteManifest['files'] = {};
  let compressed = 0;
  for (const rel of rels) {
    const size = (await stat(path.join(dir, rel))).size;
    if (size > 8 * 1024 * 1024) {
      files[rel] = { etag: await hashStream(path.join(dir, rel)), size };
      continue;
    }
    const body = await readArtifactFile(dir, rel);
    // 2. compressed beside it
    const enc = await precompress(dir, rel, body, budget, (r) => names.has(r));
    if (enc.length) compressed++;
    files[rel] = { etag: etagOf(body), size: body.length, ...(enc.length ? { enc } : {}) };
  }
  if (budget.spent) o.note('hosting: the compression budget ran out; the remaining text files are served uncompressed');
  if (budget.roomOut)
    o.note(
      'hosting: the output quota left no room for some compressed copies (ARTIFACTS_PROJECT_MAX_MB, ARTIFACTS_ACCOUNT_MAX_MB); those files are served uncompressed',
    );

  // 3. the rules
  const redirects = parseRedirects(await ruleFile(dir, '_redirects', names, o.note));
  const headers = parseHeaders(await ruleFile(dir, '_headers', names, o.note));
  if (o.spa && !redirects.rules.some((r) => r.from === '/*' || r.from === '/*/')) {
    redirects.rules.push({ from: '/*', to: '/index.html', status: 200, force: false, line: 0 });
    o.note('hosting: the spa setting adds `/* /index.html 200` (every path without a file serves /index.html)');
  }

  // 4. written and reported
  const manifest: SiteManifest = { version: 1, files, redirects: redirects.rules, headers: headers.rules };
  await mkdir(path.join(dir, SITE_DIR), { recursive: true });
  const json = Buffer.from(JSON.stringify(manifest));
  await writeFile(path.join(dir, SITE_FILE), json, { mode: 0o644 });
  o.note(`hosting: ${redirects.rules.length} redirect rules, ${headers.rules.length} header rules; ${compressed} files precompressed`);
  report('_redirects', redirects.ignored, o.note);
  report('_headers', headers.ignored, o.note);
  return { manifest, bytes: json.length };
}

/** A strong ETag's value from a file's bytes: the first 128 bits of its sha256. */
export const etagOf = (body: Buffer) => createHash('sha256').update(body).digest('hex').slice(0, 32);

async function hashStream(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex').slice(0, 32);
}

/** Every regular file under the artifact, `/`-separated, without recursion (`.cx/` is the server's). */
async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const pending = [''];
  while (pending.length) {
    const sub = pending.pop()!;
    for (const e of await readdir(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${e.name}` : e.name;
      if (e.isDirectory()) pending.push(rel);
      else if (e.isFile()) out.push(rel);
    }
  }
  return out.sort();
}

/** A rule file's text, read up to RULE_FILE_MAX_BYTES (the rest ignored, with a line saying so); '' when absent. */
async function ruleFile(dir: string, name: string, names: Set<string>, note: (t: string) => void): Promise<string> {
  if (!names.has(name)) return '';
  const handle = await open(path.join(dir, name));
  try {
    const buf = Buffer.alloc(RULE_FILE_MAX_BYTES + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    if (bytesRead > RULE_FILE_MAX_BYTES) note(`hosting: ${name} is over ${RULE_FILE_MAX_BYTES} bytes; only its first ${RULE_FILE_MAX_BYTES} are read`);
    const text = buf.subarray(0, Math.min(bytesRead, RULE_FILE_MAX_BYTES)).toString('utf8');
    // A cut line at the end is not half a rule.
    return bytesRead > RULE_FILE_MAX_BYTES ? text.slice(0, Math.max(0, text.lastIndexOf('\n'))) : text;
  } finally {
    await handle.close();
  }
}

function report(name: string, ignored: IgnoredLine[], note: (t: string) => void): void {
  for (const i of ignored.slice(0, REPORTED_LINES_MAX)) note(`hosting: ${name} line ${i.line} ignored: ${i.reason}`);
  if (ignored.length > REPORTED_LINES_MAX) note(`hosting: ${name}: ${ignored.length - REPORTED_LINES_MAX} more lines ignored`);
}
