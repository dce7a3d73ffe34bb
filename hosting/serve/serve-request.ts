import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Encoding } from '../compress/precompress.ts';
import { actionOf, firstRedirect, matchHeaders, type RuleAction } from '../rules/match.ts';
import { pathSegments } from '../rules/pattern.ts';
import { type DeployFiles, type DeployMeta, isSourceMap, type SiteFile } from './deploy-files.ts';

/**
 * One request to a site, read top to bottom:
 *   1. refusals: past the unknown-Host budget (429), a method other than GET/HEAD (405), nothing deployed (404),
 *      a path that does not decode or is too long (400);
 *   2. the deploy's rules (`_redirects`, `_headers` compiled at build end; none for older deploys);
 *   3. the first matching `_redirects` rule: forced (`!`) it applies now; otherwise only when no file answers;
 *   4. the file the path names, with clean URLs and one trailing-slash rule: a page's URL ends with `/` exactly when
 *      it is a directory's `index.html`:
 *        `/about`   serves `about`, else `about.html`; when only `about/index.html` exists: 308 to `/about/`
 *        `/about/`  serves `about/index.html`; when only `about.html` exists: 308 to `/about`
 *      (the query string is kept);
 *   5. the rule of step 3 when no file answered: a redirect (30x with Location), a rewrite (200: the target's file at
 *      this URL) or a 404 rule (the target's file with 404);
 *   6. nothing: the site's `404.html` with 404, or a plain 404;
 *   7. the answer (answer()): `_headers` of the request path, validators (strong ETag, Last-Modified; If-None-Match
 *      and If-Modified-Since -> 304), Cache-Control, a single byte Range (206, 416), the encoding kept beside the
 *      file chosen by Accept-Encoding (br, then gzip, q-values honoured; `Vary: Accept-Encoding`).
 */
export type SiteResponse =
  | { status: number; headers: Array<[string, string]>; body: Buffer }
  /**
   * A file too large to keep in memory: streamed from an open descriptor (the front door closes it), `size` bytes
   * from `start` (0 unless a Range asked for a part).
   */
  | { status: number; headers: Array<[string, string]>; file: FileHandle; size: number; start?: number };

/** Request headers the answer depends on (lower-case names, as Node and uWebSockets.js give them). */
export type RequestHeaders = Record<string, string | string[] | undefined>;

export interface ServeOptions {
  serveSourceMaps?: boolean;
  limited?: { retryAfterSec: number };
}

/** A file name with a content hash in it: safe to cache for a year (HASHED_NAME below). */
export const IMMUTABLE = 'public, max-age=31536000, immutable';
/** HTML: always revalidated (a new deploy shows at once), cheaply with the ETag. */
export const HTML_CACHE = 'no-cache';
/** Anything else with a plain name: revalidated too (its name does not change when its content does). */
export const REVALIDATE = 'public, max-age=0, must-revalidate';
/**
 * A content-hashed name, as bundlers write them: a `.` or `-` then a segment before the extension that holds a
 * digit and is either 8+ characters of [A-Za-z0-9_] (`app.3f9a2c1b.js`, `chunk-5d41402a.css`) or exactly 8 of
 * [A-Za-z0-9_-] (Vite/Rollup's `index-B-Pj1Pq9.js`). A hash without a digit is revalidated instead (the safe side).
 */
const HASHED_NAME = /[.-](?=[A-Za-z0-9_-]*\d)(?:[A-Za-z0-9_]{8,}|[A-Za-z0-9_-]{8})\.[A-Za-z0-9]+$/;
const MAX_PATH = 4096;
const NO_HEADERS: ReadonlyArray<readonly [string, string]> = [];

export function cacheControlOf(f: Pick<SiteFile, 'target' | 'type'>): string {
  // A served source map (opted in) is revalidated whatever its name: opting out must not wait for a year of caches.
  if (HASHED_NAME.test(path.basename(f.target)) && !isSourceMap(f.target)) return IMMUTABLE;
  return f.type.startsWith('text/html') ? HTML_CACHE : REVALIDATE;
}

const text = (status: number, message: string, extra: Array<[string, string]> = []): SiteResponse => ({
  status,
  headers: [['content-type', 'text/plain; charset=utf-8'], ['cache-control', 'no-store'], ...extra],
  body: Buffer.from(message),
});

const redirect = (status: number, location: string): SiteResponse => ({
  status,
  headers: [
    ['location', location],
    ['cache-control', HTML_CACHE],
    ['content-type', 'text/plain; charset=utf-8'],
  ],
  body: Buffer.from(`Redirecting to ${location}`),
});

export async function serveRequest(
  files: DeployFiles,
  root: string,
  method: string,
  url: string,
  site: ServeOptions = {},
  req: RequestHeaders = {},
): Promise<SiteResponse> {
  // 1. refusals
  if (site.limited) {
    const body = { error: 'rate_limited', message: 'too many lookups of hosts that are no site from this address; retry later' };
    return {
      status: 429,
      headers: [
        ['content-type', 'application/json'],
        ['cache-control', 'no-store'],
        ['retry-after', String(site.limited.retryAfterSec)],
      ],
      body: Buffer.from(JSON.stringify(body)),
    };
  }
  if (method !== 'GET' && method !== 'HEAD') return text(405, 'method not allowed', [['allow', 'GET, HEAD']]);
  if (!root) return text(404, 'nothing is deployed here yet');
  const q = url.indexOf('?');
  const query = q === -1 ? '' : url.slice(q + 1);
  let pathname: string;
  try {
    pathname = decodeURIComponent(q === -1 ? url : url.slice(0, q));
  } catch {
    return text(400, 'bad path');
  }
  if (pathname.includes('\0') || pathname.length > MAX_PATH) return text(400, 'bad path');
  const normalized = path.posix.normalize(`/${pathname}`);
  const serveMaps = site.serveSourceMaps === true;

  // 2. the deploy's rules (kept in memory after the first request: no await then)
  const known = files.meta(root);
  const m = known instanceof Promise ? await known : known;
  const segs = pathSegments(normalized);
  const rule = m.rules && m.rules.redirects.length > 0 ? firstRedirect(m.rules, segs) : undefined;
  const extra = m.rules && m.rules.headers.length > 0 ? matchHeaders(m.rules, segs) : NO_HEADERS;
  const answerFile = (status: number, f: SiteFile) => answer(files, root, m, status, f, req, extra);

  // 3. a forced rule
  if (rule?.rule.force) {
    const applied = await applyRule(actionOf(rule, query));
    if (applied) return applied;
  }

  // 4. the file the path names
  const found = await resolvePage(files, root, normalized, m, serveMaps);
  if (found && 'file' in found) return answerFile(200, found.file);
  if (found) return redirect(308, query ? `${found.redirect}?${query}` : found.redirect);

  // 5. the rule, now that no file answered
  if (rule && !rule.rule.force) {
    const applied = await applyRule(actionOf(rule, query));
    if (applied) return applied;
  }

  // 6. nothing
  return notFound();

  async function applyRule(r: RuleAction): Promise<SiteResponse | undefined> {
    if (r.kind === 'redirect') return redirect(r.status, r.location);
    const target = path.posix.normalize(`/${r.path.split(/[?#]/)[0]}`);
    const f = await fileOf(files, root, target, m, serveMaps);
    if (!f) return r.status === 404 ? notFound() : undefined;
    return answerFile(r.status, f);
  }

  async function notFound(): Promise<SiteResponse> {
    const page = await files.fileAt(root, '404.html', m, serveMaps);
    if (page && page !== 'dir') return answer(files, root, m, 404, page, req, extra);
    return text(404, 'not found');
  }
}

/** Step 4: the file a request path serves, or the trailing-slash redirect that leads to it. */
async function resolvePage(
  files: DeployFiles,
  root: string,
  p: string,
  m: DeployMeta,
  maps: boolean,
): Promise<{ file: SiteFile } | { redirect: string } | undefined> {
  const rel = p.replace(/^\/+|\/+$/g, '');
  if (p.endsWith('/')) {
    const index = await files.fileAt(root, rel ? `${rel}/index.html` : 'index.html', m, maps);
    if (index && index !== 'dir') return { file: index };
    if (!rel) return undefined;
    const page = await files.fileAt(root, `${rel}.html`, m, maps);
    return page && page !== 'dir' ? { redirect: `/${rel}` } : undefined;
  }
  const exact = await files.fileAt(root, rel, m, maps);
  if (exact && exact !== 'dir') return { file: exact };
  const page = await files.fileAt(root, `${rel}.html`, m, maps);
  if (page && page !== 'dir') return { file: page };
  if (exact === 'dir') {
    const index = await files.fileAt(root, `${rel}/index.html`, m, maps);
    if (index && index !== 'dir') return { redirect: `/${rel}/` };
  }
  return undefined;
}

/** A rule's target as a file: the path, its `index.html` when a directory, or its `.html` (no redirect). */
async function fileOf(files: DeployFiles, root: string, p: string, m: DeployMeta, maps: boolean): Promise<SiteFile | undefined> {
  const rel = p.replace(/^\/+|\/+$/g, '');
  for (const candidate of [rel, rel ? `${rel}/index.html` : 'index.html', `${rel}.html`]) {
    if (!candidate || candidate === '.html') continue;
    const f = await files.fileAt(root, candidate, m, maps);
    if (f && f !== 'dir') return f;
  }
  return undefined;
}

/** Step 7: a file's answer, given what the request asked for. */
async function answer(
  files: DeployFiles,
  root: string,
  m: DeployMeta,
  status: number,
  f: SiteFile,
  req: RequestHeaders,
  extra: ReadonlyArray<readonly [string, string]>,
): Promise<SiteResponse> {
  const range = status === 200 ? header(req, 'range') : undefined;
  // The encoding: never for a Range (parts are of the identity bytes).
  let chosen: SiteFile = f;
  let encoding: Encoding | undefined;
  if (f.enc.length && !range) {
    encoding = chooseEncoding(header(req, 'accept-encoding'), f.enc);
    if (encoding) {
      const sib = await files.sibling(root, f.rel, encoding, m);
      if (sib && sib !== 'dir') chosen = sib;
      else encoding = undefined;
    }
  }
  const etag = encoding ? encodedEtag(f.etag, encoding) : f.etag;
  let headers = headersOf(f, encoding, status);
  if (extra.length) {
    headers = headers.slice();
    for (const [k, v] of extra) {
      const i = headers.findIndex(([name]) => name === k);
      if (i === -1) headers.push([k, v]);
      else headers[i] = [k, v];
    }
  }

  // Validators: If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2).
  if (status === 200) {
    const inm = header(req, 'if-none-match');
    const ims = inm === undefined ? header(req, 'if-modified-since') : undefined;
    if ((inm !== undefined && etagMatches(inm, etag)) || (ims !== undefined && Date.parse(ims) >= f.mtimeSec * 1000))
      return {
        status: 304,
        headers: extra.length ? headers.filter(([k]) => k !== 'content-type' && k !== 'accept-ranges') : headersOf(f, encoding, 304),
        body: EMPTY,
      };
  }

  // A single byte range of the identity bytes; an If-Range that is not this ETag asks for the whole file.
  if (range !== undefined) {
    const ifRange = header(req, 'if-range');
    const part = ifRange === undefined || ifRange === f.etag ? parseRange(range, f.size) : undefined;
    if (part === 'unsatisfiable') {
      const h: Array<[string, string]> = [
        ['content-range', `bytes */${f.size}`],
        ['content-type', 'text/plain; charset=utf-8'],
        ['cache-control', 'no-store'],
      ];
      return { status: 416, headers: h, body: Buffer.from('range not satisfiable') };
    }
    if (part) {
      headers = [...headers, ['content-range', `bytes ${part.start}-${part.end}/${f.size}`]];
      const length = part.end - part.start + 1;
      if (f.body) return { status: 206, headers, body: f.body.subarray(part.start, part.end + 1) };
      return { status: 206, headers, file: await files.openStream(f), size: length, start: part.start };
    }
  }
  // HEAD too: the front door sends the length and no body (a streamed file's descriptor is closed unread).
  if (chosen.body) return { status, headers, body: chosen.body };
  return { status, headers, file: await files.openStream(chosen), size: chosen.size };
}

const EMPTY = Buffer.alloc(0);

/** An encoded answer's ETag: the identity's with the encoding named (`"abc"` -> `"abc-br"`), as the bytes differ. */
const encodedEtag = (etag: string, encoding: Encoding) => `${etag.slice(0, -1)}-${encoding === 'br' ? 'br' : 'gz'}"`;

/**
 * The headers every answer of a file carries in one encoding, built once per file and encoding and kept with it
 * (a deploy's files never change): type, caching, validators, `Vary` when it has encodings, `Accept-Ranges` on 200s;
 * a 304's are the 200's without type and ranges.
 * Shared between answers: whoever adds to them copies first.
 */
function headersOf(f: SiteFile, encoding: Encoding | undefined, status: number): Array<[string, string]> {
  const key = `${encoding ?? 'identity'}${status === 200 || status === 304 ? status : ''}`;
  const memo = (f.answers ??= {});
  let headers = memo[key];
  if (!headers) {
    headers = [
      ['content-type', f.type],
      ['cache-control', cacheControlOf(f)],
      ['etag', encoding ? encodedEtag(f.etag, encoding) : f.etag],
      ['last-modified', f.lastModified],
      ['x-content-type-options', 'nosniff'],
    ];
    if (f.enc.length) headers.push(['vary', 'Accept-Encoding']);
    if (encoding) headers.push(['content-encoding', encoding]);
    if (status === 200) headers.push(['accept-ranges', 'bytes']);
    // A 304 carries the validators and caching of the 200 it stands for, not its type.
    if (status === 304) headers = headers.filter(([k]) => k !== 'content-type');
    memo[key] = headers;
  }
  return headers;
}

function header(req: RequestHeaders, name: string): string | undefined {
  const v = req[name];
  return Array.isArray(v) ? v.join(', ') : v || undefined;
}

/** `If-None-Match`: `*` or a list of tags, compared weakly (a `W/` prefix ignored), as RFC 9110 asks for GET. */
function etagMatches(inm: string, etag: string): boolean {
  if (inm.trim() === '*') return true;
  const bare = etag.replace(/^W\//, '');
  return inm.split(',').some((t) => t.trim().replace(/^W\//, '') === bare);
}

/**
 * `Accept-Encoding` against the encodings kept beside a file: br before gzip at equal q, `q=0` refuses one, `*`
 * stands for those not named; none acceptable: identity.
 */
export function chooseEncoding(accept: string | undefined, have: Encoding[]): Encoding | undefined {
  if (!accept) return undefined;
  const q = new Map<string, number>();
  for (const part of accept.split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const qp = params.map((s) => s.trim()).find((s) => s.startsWith('q='));
    const value = qp ? Number(qp.slice(2)) : 1;
    q.set(name.trim(), Number.isFinite(value) ? value : 0);
  }
  const weight = (name: string) => q.get(name) ?? q.get('*') ?? 0;
  let best: Encoding | undefined;
  for (const enc of ['br', 'gzip'] as const) {
    if (!have.includes(enc)) continue;
    const w = weight(enc);
    if (w > 0 && (best === undefined || w > weight(best))) best = enc;
  }
  return best;
}

/**
 * A `Range: bytes=...` header against a size: one range (`a-b`, `a-`, `-n`), 'unsatisfiable' (416), or undefined
 * when it is to be ignored: not bytes, malformed, or several ranges (answered whole with 200, as RFC 9110 allows).
 */
export function parseRange(range: string, size: number): { start: number; end: number } | 'unsatisfiable' | undefined {
  const m = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/.exec(range);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
