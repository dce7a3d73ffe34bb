import { constants } from 'node:fs';
import { open, readdir, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { inspectSourceMap, type MapRefusal } from '../../domain/source-maps/source-map-file.ts';
import { sourceMapsRepository, type NewSourceMap } from '../../domain/source-maps/source-maps-repository.ts';
import { normalizeDebugId } from '../../schemas/debug-id.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * A build's source maps, kept privately for symbolication (issue 37), collected from the copied artifact before the
 * deploy turns ready. The output is the tenant's: every name, link and comment in it is hostile.
 *   1. walk      the artifact without following links: its JS/CSS files, and every `*.map` (one that is not a regular
 *                file, a link, a directory or a FIFO, is refused)
 *   2. comments  each JS/CSS file's trailing `//# sourceMappingURL=` (or `/*# ... *\/`) and `//# debugId=`, read from
 *                its last TAIL_BYTES only; an inline `data:` map longer than that is read back to its line's start,
 *                never past what a map of `mapBytes` encodes to
 *   3. resolve   a URL names a map inside the output: relative to the file (or to the root with a leading `/`), no
 *                scheme but `data:`, never out of the output (`..`), never through a link, never the file itself
 *   4. keep      the maps JS/CSS files name first, then the loose `*.map`s (sorted, so the same output keeps the same
 *                maps), within the per-map size (checked with fstat before reading), the count and the bytes per
 *                deploy; each passes inspectSourceMap and goes to `keep` with the path the site serves its file at
 * Every refusal is one build-log line with its reason and file (past REFUSAL_LINES of one reason, only counted), and
 * one summary line closes: "kept N source maps (X KB or MB) for symbolication; refused M: reason n, ...".
 */
export const COLLECT_REFUSALS = [
  'map_not_a_file',
  'map_outside_output',
  'map_url_not_relative',
  'map_missing',
  'map_is_itself',
  'map_unreadable',
  'too_many_maps',
  'deploy_maps_too_large',
] as const;
export type SourceMapRefusal = (typeof COLLECT_REFUSALS)[number] | MapRefusal;

export interface SourceMapLimits {
  mapBytes: number;
  mapsPerDeploy: number;
  bytesPerDeploy: number;
}

export interface CollectSourceMapsOptions {
  /** The deploy's artifact (DATA_DIR/artifacts/<deployId>). */
  root: string;
  /** One build-log line. */
  note(text: string): void;
  /** Store one map (called in order, one at a time, so at most one map's bytes are held). */
  keep(map: NewSourceMap): Promise<void>;
  /** Defaults to LIMITS.sourceMaps (tests shrink them). */
  limits?: SourceMapLimits;
}

export interface CollectedSourceMaps {
  kept: number;
  bytes: number;
  refused: Partial<Record<SourceMapRefusal, number>>;
}

/** A JS/CSS file's trailing comments are read from this many bytes at its end (never the whole file). */
export const TAIL_BYTES = 4096;
/** Refusal lines of one reason in the build log; past it they are only counted in the summary. */
export const REFUSAL_LINES = 20;
const SCRIPT = /\.(?:m?js|cjs|css)$/i;
const MAP = /\.map$/i;
const MAP_URL = /(?:\/\/|\/\*)[#@][ \t]*sourceMappingURL=[ \t]*([^\s'"`]+?)[ \t]*(?:\*\/)?[ \t]*(?=\r?\n|$)/g;
const DEBUG_ID = /(?:\/\/|\/\*)[#@][ \t]*debugId=[ \t]*([0-9A-Za-z-]{32,48})[ \t]*(?:\*\/)?[ \t]*(?=\r?\n|$)/g;
const BASE64_TAIL = /^[A-Za-z0-9+/=_-]+$/;

type Candidate =
  | { kind: 'file'; rel: string; mapName: string; servedPath?: string; debugId?: string; namedBy?: string }
  /** An inline map is decoded when its turn comes (read again then), so at most one map's bytes are held. */
  | { kind: 'inline'; rel: string; mapName: string; servedPath: string; debugId?: string };
type Outcome<T> = { ok: true; value: T } | { ok: false; reason: SourceMapRefusal; detail: string };

export async function collectSourceMaps(o: CollectSourceMapsOptions): Promise<CollectedSourceMaps> {
  const limits = o.limits ?? LIMITS.sourceMaps;
  const result: CollectedSourceMaps = { kept: 0, bytes: 0, refused: {} };
  const refuse = (file: string, reason: SourceMapRefusal, detail: string) => {
    const n = (result.refused[reason] = (result.refused[reason] ?? 0) + 1);
    if (n <= REFUSAL_LINES) o.note(`source map refused (${reason}): ${file}: ${detail}`);
    if (n === REFUSAL_LINES) o.note(`further ${reason} refusals are only counted`);
  };
  const root = await realpath(o.root).catch(() => undefined);
  if (!root) return result;

  // 1. walk
  const files = new Set<string>();
  const scripts: string[] = [];
  const maps: string[] = [];
  const handled = new Set<string>();
  for (const entry of await walk(root)) {
    if (entry.kind === 'file') {
      files.add(entry.rel);
      if (MAP.test(entry.rel)) maps.push(entry.rel);
      else if (SCRIPT.test(entry.rel)) scripts.push(entry.rel);
    } else if (MAP.test(entry.rel)) {
      handled.add(entry.rel);
      refuse(entry.rel, 'map_not_a_file', `a ${entry.kind}, not a file`);
    }
  }

  // 2-3. the maps JS/CSS files name
  const candidates: Candidate[] = [];
  const debugIds = new Map<string, string>();
  for (const rel of scripts) {
    const comments = await trailingComments(path.join(root, rel), limits.mapBytes);
    if (!comments.ok) {
      refuse(`${rel} (inline)`, comments.reason, comments.detail);
      continue;
    }
    const { url, debugId } = comments.value;
    if (debugId) debugIds.set(rel, debugId);
    if (!url) continue;
    const servedPath = `/${rel}`;
    if (/^data:/i.test(url)) {
      candidates.push({ kind: 'inline', rel, mapName: `${rel} (inline)`, servedPath, debugId });
      continue;
    }
    const target = resolveMapUrl(rel, url);
    if (!target.ok) {
      refuse(rel, target.reason, target.detail);
      continue;
    }
    if (handled.has(target.value)) continue;
    handled.add(target.value);
    candidates.push({ kind: 'file', rel: target.value, mapName: target.value, servedPath, debugId, namedBy: rel });
  }
  // A map no file names (a "hidden" source map) maps the file its name minus `.map` names, when there is one.
  for (const rel of maps) {
    if (handled.has(rel)) continue;
    const mapped = rel.slice(0, -'.map'.length);
    candidates.push({ kind: 'file', rel, mapName: rel, servedPath: files.has(mapped) ? `/${mapped}` : undefined, debugId: debugIds.get(mapped) });
  }

  // 4. keep, within the bounds
  for (const c of candidates) {
    const shown = c.kind === 'file' && c.namedBy ? `${c.mapName} (named by ${c.namedBy})` : c.mapName;
    if (result.kept >= limits.mapsPerDeploy) {
      refuse(shown, 'too_many_maps', `more than ${limits.mapsPerDeploy} source maps in one deploy`);
      continue;
    }
    const read = c.kind === 'inline' ? await readInlineMap(path.join(root, c.rel), limits.mapBytes) : await readMap(root, c.rel, limits, result.bytes);
    if (!read.ok) {
      refuse(shown, read.reason, read.detail);
      continue;
    }
    const content = read.value;
    if (content.length > limits.mapBytes) {
      refuse(shown, 'map_too_large', `${content.length} bytes, more than ${limits.mapBytes}`);
      continue;
    }
    if (result.bytes + content.length > limits.bytesPerDeploy) {
      refuse(shown, 'deploy_maps_too_large', `the deploy's maps would pass ${mb(limits.bytesPerDeploy)}`);
      continue;
    }
    const inspected = inspectSourceMap(content);
    if (inspected.kind === 'refused') {
      refuse(shown, inspected.reason, inspected.detail);
      continue;
    }
    await o.keep({ mapName: c.mapName, servedPath: c.servedPath, debugId: c.debugId ?? inspected.debugId, content });
    result.kept++;
    result.bytes += content.length;
  }

  const refusedTotal = Object.values(result.refused).reduce((n, k) => n + k, 0);
  if (result.kept || refusedTotal) {
    const reasons = Object.entries(result.refused)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    o.note(
      `kept ${result.kept} source map${result.kept === 1 ? '' : 's'} (${mb(result.bytes)}) for symbolication; refused ${refusedTotal}${reasons ? `: ${reasons}` : ''}`,
    );
  }
  return result;
}

/**
 * A deploy's maps collected from its artifact and stored (one row a map, as each is read). Should storing fail, what
 * was stored goes and the deploy stays ready: its errors stay minified, the build log says so.
 */
export async function keepDeploySourceMaps(
  db: Queryable,
  owner: { projectId: string; deployId: string },
  artifactDir: string,
  note: (text: string) => void,
): Promise<CollectedSourceMaps | undefined> {
  try {
    return await collectSourceMaps({ root: artifactDir, note, keep: (map) => sourceMapsRepository.insert(db, owner, [map]) });
  } catch (err) {
    await sourceMapsRepository.deleteForDeploys(db, [owner.deployId]).catch(() => undefined);
    note(`source maps were not kept (${(err as Error).message}): this deploy's errors stay minified`);
    return undefined;
  }
}

const mb = (bytes: number) => (bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
const inside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

/** Every entry under root, posix-relative, sorted; links are entries (never followed), directories are walked. */
async function walk(root: string): Promise<Array<{ rel: string; kind: 'file' | 'directory' | 'link' | 'special file' }>> {
  const out: Array<{ rel: string; kind: 'file' | 'directory' | 'link' | 'special file' }> = [];
  const pending = [''];
  while (pending.length) {
    const dir = pending.pop()!;
    for (const e of await readdir(path.join(root, dir), { withFileTypes: true }).catch(() => [])) {
      const rel = dir ? `${dir}/${e.name}` : e.name;
      if (e.isDirectory()) pending.push(rel);
      out.push({ rel, kind: e.isFile() ? 'file' : e.isDirectory() ? 'directory' : e.isSymbolicLink() ? 'link' : 'special file' });
    }
  }
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

/**
 * The last `sourceMappingURL` and `debugId` comments of a file, from its last TAIL_BYTES. When no comment is there
 * and that tail is all base64 (an inline map longer than the tail), the last line is read back to its start, at
 * most what a map of `mapBytes` encodes to.
 */
async function trailingComments(file: string, mapBytes: number): Promise<Outcome<{ url?: string; debugId?: string }>> {
  let h: FileHandle | undefined;
  try {
    h = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await h.stat();
    if (!st.isFile()) return { ok: true, value: {} };
    let text = await readAt(h, Math.max(0, st.size - TAIL_BYTES), Math.min(st.size, TAIL_BYTES));
    const end = text.replace(/[\s]*(?:\*\/)?[\s]*$/, '');
    if (st.size > TAIL_BYTES && !end.includes('sourceMappingURL=') && !/[\r\n]/.test(end) && BASE64_TAIL.test(end)) {
      const bound = Math.ceil(mapBytes / 3) * 4 + TAIL_BYTES;
      const span = Math.min(st.size, bound);
      text = await readAt(h, st.size - span, span);
      if (span < st.size && !/[\r\n]/.test(text.trimEnd()))
        return { ok: false, reason: 'map_too_large', detail: `its last line is longer than an inline map of ${mapBytes} bytes` };
    }
    return { ok: true, value: { url: lastMatch(MAP_URL, text), debugId: normalizeDebugId(lastMatch(DEBUG_ID, text)) } };
  } catch {
    return { ok: true, value: {} };
  } finally {
    await h?.close();
  }
}

function lastMatch(re: RegExp, text: string): string | undefined {
  let last: string | undefined;
  for (const m of text.matchAll(re)) last = m[1];
  return last;
}

async function readAt(h: FileHandle, position: number, length: number): Promise<string> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await h.read(buf, got, length - got, position + got);
    if (!bytesRead) break;
    got += bytesRead;
  }
  return buf.subarray(0, got).toString('utf8');
}

/** The inline map a file's trailing comment holds, decoded. */
async function readInlineMap(file: string, mapBytes: number): Promise<Outcome<Buffer>> {
  const comments = await trailingComments(file, mapBytes);
  if (!comments.ok) return comments;
  const url = comments.value.url;
  if (!url || !/^data:/i.test(url)) return { ok: false, reason: 'map_unreadable', detail: 'its inline map is gone' };
  return decodeDataUrl(url, mapBytes);
}

/** `data:application/json;base64,...` (or percent-encoded JSON): its bytes, refused before decoding past mapBytes. */
function decodeDataUrl(url: string, mapBytes: number): Outcome<Buffer> {
  const m = /^data:([^,]*),(.*)$/is.exec(url);
  if (!m) return { ok: false, reason: 'map_unreadable', detail: 'a data: URL without a comma' };
  const params = m[1]!.toLowerCase().split(';');
  const type = params[0]!.trim();
  if (type !== '' && type !== 'application/json' && type !== 'text/plain')
    return { ok: false, reason: 'map_unreadable', detail: `a data: URL of ${type.slice(0, 60)}, not application/json` };
  const data = m[2]!;
  if (params.includes('base64')) {
    if (Math.floor((data.length * 3) / 4) > mapBytes + 2) return { ok: false, reason: 'map_too_large', detail: `an inline map over ${mapBytes} bytes` };
    return { ok: true, value: Buffer.from(data, 'base64') };
  }
  if (data.length > mapBytes * 3) return { ok: false, reason: 'map_too_large', detail: `an inline map over ${mapBytes} bytes` };
  try {
    return { ok: true, value: Buffer.from(decodeURIComponent(data)) };
  } catch {
    return { ok: false, reason: 'map_unreadable', detail: 'a data: URL that does not decode' };
  }
}

/** The output-relative path a file's `sourceMappingURL` names, or why it names none this service will read. */
function resolveMapUrl(fromRel: string, url: string): Outcome<string> {
  const shown = url.length > 200 ? `${url.slice(0, 200)}…` : url;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//'))
    return { ok: false, reason: 'map_url_not_relative', detail: `names ${shown}: only a path inside the output (or a data: URL) is read` };
  let ref: string;
  try {
    ref = decodeURIComponent(url.split(/[?#]/)[0]!);
  } catch {
    return { ok: false, reason: 'map_unreadable', detail: `names ${shown}, which does not decode` };
  }
  if (!ref || ref.includes('\0') || ref.includes('\\')) return { ok: false, reason: 'map_unreadable', detail: `names ${shown}, not a path` };
  const rel = ref.startsWith('/') ? path.posix.normalize(ref.slice(1)) : path.posix.normalize(path.posix.join(path.posix.dirname(fromRel), ref));
  if (rel === '..' || rel.startsWith('../') || rel === '.' || rel === '')
    return { ok: false, reason: 'map_outside_output', detail: `names ${shown}, outside the output` };
  if (rel === fromRel) return { ok: false, reason: 'map_is_itself', detail: `names itself as its source map` };
  return { ok: true, value: rel };
}

/**
 * A map file's bytes: a regular file reached through no link, its size (fstat, before any read) within the per-map
 * and the deploy's bytes. Opened non-blocking, so a FIFO never stalls the build.
 */
async function readMap(root: string, rel: string, limits: SourceMapLimits, keptBytes: number): Promise<Outcome<Buffer>> {
  const joined = path.join(root, rel);
  const real = await realpath(joined).catch(() => undefined);
  if (!real) return { ok: false, reason: 'map_missing', detail: 'not in the output' };
  if (!inside(root, real)) return { ok: false, reason: 'map_outside_output', detail: 'a link out of the output' };
  if (real !== joined) return { ok: false, reason: 'map_not_a_file', detail: 'a link, not a file' };
  let h: FileHandle | undefined;
  try {
    h = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await h.stat();
    if (!st.isFile()) return { ok: false, reason: 'map_not_a_file', detail: st.isDirectory() ? 'a directory, not a file' : 'a special file, not a file' };
    if (st.size > limits.mapBytes) return { ok: false, reason: 'map_too_large', detail: `${st.size} bytes, more than ${limits.mapBytes}` };
    if (keptBytes + st.size > limits.bytesPerDeploy)
      return { ok: false, reason: 'deploy_maps_too_large', detail: `the deploy's maps would pass ${mb(limits.bytesPerDeploy)}` };
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < st.size) {
      const { bytesRead } = await h.read(buf, got, st.size - got, got);
      if (!bytesRead) break;
      got += bytesRead;
    }
    return { ok: true, value: buf.subarray(0, got) };
  } catch (err) {
    return { ok: false, reason: 'map_unreadable', detail: (err as NodeJS.ErrnoException).code ?? 'unreadable' };
  } finally {
    await h?.close();
  }
}
