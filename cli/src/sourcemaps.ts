import { createHash } from 'node:crypto';
import { lstat, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { zipSync, type Zippable } from 'fflate';
import type { AssembleAnswer } from '../../schemas/api/source-maps.ts';
import type { Client } from './client.ts';

/**
 * `cx sourcemaps upload <dir>`: a build's source maps to the service, for apps built elsewhere and served by cx.js or a
 * Sentry SDK, on the same routes as `sentry-cli sourcemaps upload` (api/source-maps/):
 *  1. walk `dir` (no links followed, at most MAX_DEPTH deep) for `*.js`/`*.mjs`/`*.cjs` and `*.map` files;
 *  2. each JS file's last `//# sourceMappingURL=` names its map (a file beside it, or an inline `data:` map) and its last
 *     `//# debugId=` the debug id the bundler (or `sentry-cli sourcemaps inject`) wrote; a map's own `debugId` counts too;
 *  3. one artifact bundle as sentry-cli writes it (a ZIP with `manifest.json`): each map a `source_map` entry, each JS
 *     file that names one a `minified_source` entry of the manifest with its `sourcemap` and `debug-id` headers, which
 *     is all the service reads of it (its bytes are not sent);
 *  4. the options, then assemble (which chunks are missing), the chunks, and assemble again.
 * Bounds are the service's (its answer refuses what is over); this side stops early with the same numbers.
 */
export const UPLOAD_ORG = 'cx';
const MAX_DEPTH = 32;
/** The service's LIMITS.sourceMaps, repeated so the CLI needs no schema module at run time (the service checks anyway). */
const MAX_FILES = 2_000;
const MAX_MAP_BYTES = 16 * 1024 * 1024;
const MAX_UPLOAD_BYTES = 128 * 1024 * 1024;

const JS = /\.(m|c)?js$/i;

export interface CollectedMap {
  /** Path inside `dir`, with `/`. */
  rel: string;
  content: Buffer;
  debugId?: string;
}

export interface CollectedSource {
  rel: string;
  /** The map it names, as written (relative to the file, or a generated name for an inline map). */
  sourceMap: string;
  debugId?: string;
}

export interface Collected {
  maps: CollectedMap[];
  sources: CollectedSource[];
  /** Files left out, and why (too large, an unreadable inline map). */
  skipped: string[];
}

export async function collectSourceMaps(dir: string): Promise<Collected> {
  const root = path.resolve(dir);
  const info = await lstat(root).catch(() => undefined);
  if (!info?.isDirectory()) throw new Error(`${dir} is not a directory`);
  const files: string[] = [];
  await walk(root, 0, files);
  const maps = new Map<string, CollectedMap>();
  const sources: CollectedSource[] = [];
  const skipped: string[] = [];
  let bytes = 0;
  const addMap = (m: CollectedMap) => {
    if (m.content.length > MAX_MAP_BYTES) return void skipped.push(`${m.rel} (${m.content.length} bytes, more than ${MAX_MAP_BYTES})`);
    bytes += m.content.length;
    if (bytes > MAX_UPLOAD_BYTES) throw new Error(`the maps under ${dir} come to more than ${MAX_UPLOAD_BYTES} bytes; upload a smaller folder`);
    maps.set(m.rel, m);
  };

  for (const rel of files.filter((f) => f.endsWith('.map'))) {
    const content = await readFile(path.join(root, rel));
    addMap({ rel, content, debugId: ownDebugId(content) });
  }
  for (const rel of files.filter((f) => JS.test(f))) {
    const text = await readFile(path.join(root, rel), 'utf8');
    const ref = lastComment(text, 'sourceMappingURL');
    if (!ref) continue;
    const debugId = lastComment(text, 'debugId');
    if (/^data:/i.test(ref)) {
      const inline = decodeDataUrl(ref);
      if (!inline) {
        skipped.push(`${rel} (its inline map is not base64 JSON)`);
        continue;
      }
      const name = `${path.posix.basename(rel)}.inline.map`;
      addMap({ rel: path.posix.join(path.posix.dirname(rel), name), content: inline, debugId: ownDebugId(inline) });
      sources.push({ rel, sourceMap: name, debugId });
    } else sources.push({ rel, sourceMap: ref, debugId });
  }
  if (maps.size + sources.length > MAX_FILES) throw new Error(`more than ${MAX_FILES} files to upload under ${dir}; upload the build output only`);
  return { maps: [...maps.values()], sources, skipped };
}

/** The bundle: a plain ZIP with sentry-cli's manifest (`urlPrefix` `~/` = any host; `~/static` for files served under /static). */
export function bundleOf(collected: Collected, opts: { project: string; urlPrefix?: string }): Buffer {
  const prefix = (opts.urlPrefix ?? '~/').replace(/\/+$/, '');
  const url = (rel: string) => `${prefix}/${rel}`;
  const entry = (rel: string) => `files/_/_/${rel}`;
  const byRel = new Map(collected.maps.map((m) => [m.rel, m]));
  const manifest: Record<string, { type: string; url: string; headers: Record<string, string> }> = {};
  const zip: Zippable = {};
  for (const s of collected.sources) {
    const mapRel = path.posix.normalize(path.posix.join(path.posix.dirname(s.rel), s.sourceMap.split(/[?#]/)[0]!));
    const map = byRel.get(mapRel);
    if (map && !map.debugId && s.debugId) map.debugId = s.debugId;
    manifest[entry(s.rel)] = { type: 'minified_source', url: url(s.rel), headers: { sourcemap: s.sourceMap, ...(s.debugId ? { 'debug-id': s.debugId } : {}) } };
  }
  for (const m of collected.maps) {
    manifest[entry(m.rel)] = { type: 'source_map', url: url(m.rel), headers: m.debugId ? { 'debug-id': m.debugId } : {} };
    zip[entry(m.rel)] = m.content;
  }
  zip['manifest.json'] = Buffer.from(JSON.stringify({ files: manifest, org: UPLOAD_ORG, project: opts.project }));
  return Buffer.from(zipSync(zip, { level: 6, mtime: new Date('1980-01-02T00:00:00Z') }));
}

/**
 * Options, assemble (missing chunks), the chunks, assemble again: what sentry-cli does, on the same routes, through the
 * typed client. The chunks go to the table's chunk-upload route, which is the `url` this service's options name.
 */
export async function uploadBundle(client: Client, project: string, bundle: Buffer): Promise<AssembleAnswer> {
  const params = { org: UPLOAD_ORG };
  const options = await client.api.call('chunkUploadOptions', { params });
  const chunks: Array<{ checksum: string; bytes: Buffer }> = [];
  for (let off = 0; off < bundle.length; off += options.chunkSize) {
    const bytes = bundle.subarray(off, off + options.chunkSize);
    chunks.push({ checksum: sha1(bytes), bytes });
  }
  const body = { checksum: sha1(bundle), chunks: chunks.map((c) => c.checksum), projects: [project] };
  const first = await client.api.call('assembleArtifactBundle', { params, body });
  const missing = new Set(first.missingChunks);
  const gzip = options.compression.includes('gzip');
  for (const c of chunks.filter((x) => missing.has(x.checksum))) {
    missing.delete(c.checksum);
    const form = new FormData();
    form.append(gzip ? 'file_gzip' : 'file', new Blob([new Uint8Array(gzip ? gzipSync(c.bytes) : c.bytes)]), c.checksum);
    await client.api.call('uploadChunks', { params, body: form });
  }
  return first.missingChunks.length || first.state === 'not_found' ? client.api.call('assembleArtifactBundle', { params, body }) : first;
}

async function walk(dir: string, depth: number, out: string[], rel = ''): Promise<void> {
  if (depth > MAX_DEPTH) return;
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isSymbolicLink()) continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walk(path.join(dir, e.name), depth + 1, out, r);
    else if (e.isFile() && (e.name.endsWith('.map') || JS.test(e.name))) {
      out.push(r);
      if (out.length > MAX_FILES * 4) throw new Error(`more than ${MAX_FILES * 4} JS and map files under the folder; upload the build output only`);
    }
  }
}

/** The value of the last `//# name=value` (or `//@`) comment in a file, as bundlers write them at its end. */
function lastComment(text: string, name: string): string | undefined {
  const re = new RegExp(`//[#@]\\s*${name}=(\\S+)`, 'g');
  let found: string | undefined;
  for (const m of text.matchAll(re)) found = m[1];
  return found;
}

function ownDebugId(content: Buffer): string | undefined {
  try {
    const map = JSON.parse(content.toString('utf8')) as { debugId?: unknown; debug_id?: unknown };
    const id = map.debugId ?? map.debug_id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

function decodeDataUrl(url: string): Buffer | undefined {
  const m = /^data:application\/json[^,]*;base64,(.*)$/i.exec(url);
  return m ? Buffer.from(m[1]!, 'base64') : undefined;
}

const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');
