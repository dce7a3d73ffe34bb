import { strFromU8, unzipSync, type UnzipFileInfo } from 'fflate';
import { parseBoundedJson } from '../../platform/bounded-json.ts';
import { normalizeDebugId } from '../../schemas/debug-id.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { inspectSourceMap, type MapRefusal } from '../../domain/source-maps/source-map-file.ts';
import type { NewSourceMap } from '../../domain/source-maps/source-maps-repository.ts';

/**
 * Reads an artifact bundle as sentry-cli writes it (symbolic's SourceBundleWriter): an 8-byte `SYSB` header and a ZIP,
 * or a plain ZIP (`cx sourcemaps upload`), holding `manifest.json` and `files/...` entries. The bundle is a tenant's and
 * hostile, so it is read with fflate (never by hand) under hard bounds, and only what is needed is decompressed:
 *  1. the central directory: at most uploadFiles + 1 entries, no name twice, else the bundle is refused;
 *  2. `manifest.json` (at most MANIFEST_BYTES): `files` keyed by entry name, each with `type`, `url`, `headers`; an entry
 *     name or url that climbs out (`..`, a backslash, a control character) refuses the bundle;
 *  3. each `source_map` entry, by the size its directory declares: over mapBytes it is refused unread; all of them
 *     together over uploadBytes refuse the bundle (a zip bomb declares small and inflates big: fflate inflates into a
 *     buffer of the declared size and no further, so memory is what was declared and checked);
 *  4. each map passes inspectSourceMap; its debug id is the entry's `debug-id` header, else the map's own; the path it
 *     is found by is that of the `minified_source` entry whose `sourcemap` header names it, else its own url without
 *     `.map`, the url taken as a site path (`~/assets/index.js` → `/assets/index.js`; a full URL → its path).
 * JS files are never decompressed: the headers in the manifest say all that is needed of them.
 */
export const BUNDLE_REFUSALS = ['bundle_unreadable', 'bundle_too_many_files', 'bundle_too_large', 'manifest_invalid', 'path_outside'] as const;
export type BundleRefusal = (typeof BUNDLE_REFUSALS)[number];

/** A map left out of an accepted bundle: its name, why (inspectSourceMap's reasons), and the detail. */
export interface RefusedMap {
  mapName: string;
  reason: MapRefusal;
  detail: string;
}

export type ReadBundle =
  | { kind: 'ok'; maps: NewSourceMap[]; refused: RefusedMap[]; files: number }
  | { kind: 'refused'; reason: BundleRefusal; detail: string };

/** sentry-cli's manifest for 2,000 files is well under 1 MB. */
export const MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_PATH_CHARS = 2_048;

class Stop extends Error {
  constructor(
    readonly reason: BundleRefusal,
    detail: string,
  ) {
    super(detail);
  }
}

export function readArtifactBundle(blob: Uint8Array): ReadBundle {
  try {
    return read(blob);
  } catch (err) {
    if (err instanceof Stop) return { kind: 'refused', reason: err.reason, detail: err.message };
    return { kind: 'refused', reason: 'bundle_unreadable', detail: `not a readable ZIP: ${String((err as Error)?.message ?? err).slice(0, 200)}` };
  }
}

function read(blob: Uint8Array): ReadBundle {
  const S = LIMITS.sourceMaps;
  // 1. The directory, and the manifest.
  const entries = new Map<string, UnzipFileInfo>();
  const first = unzipSync(blob, {
    filter: (f) => {
      if (entries.size >= S.uploadFiles + 1) throw new Stop('bundle_too_many_files', `more than ${S.uploadFiles} files in the bundle`);
      if (entries.has(f.name)) throw new Stop('bundle_unreadable', `the entry ${quote(f.name)} appears twice`);
      entries.set(f.name, f);
      return f.name === 'manifest.json' && declared(f) <= MANIFEST_BYTES;
    },
  });
  const manifestEntry = entries.get('manifest.json');
  if (!manifestEntry) throw new Stop('manifest_invalid', 'the bundle has no manifest.json');
  if (!first['manifest.json']) throw new Stop('bundle_too_large', `manifest.json is larger than ${MANIFEST_BYTES} bytes`);

  // 2. The manifest.
  const parsed = parseBoundedJson(strFromU8(first['manifest.json']));
  if (!parsed.ok) throw new Stop('manifest_invalid', `manifest.json: ${parsed.message}`);
  const files = isObject(parsed.value) ? parsed.value.files : undefined;
  if (!isObject(files)) throw new Stop('manifest_invalid', 'manifest.json has no "files" object');
  const names = Object.keys(files);
  if (names.length > S.uploadFiles) throw new Stop('bundle_too_many_files', `the manifest lists more than ${S.uploadFiles} files`);

  const maps: Array<{ entry: string; path: string; debugId?: string }> = [];
  const mapsBySource = new Map<string, string>(); // a map's path → the path of the JS file that names it
  for (const name of names) {
    const file = files[name];
    if (!isObject(file)) throw new Stop('manifest_invalid', `manifest entry ${quote(name)} is not an object`);
    if (!safeEntryName(name)) throw new Stop('path_outside', `manifest entry ${quote(name)} is not a path inside the bundle`);
    if (typeof file.url !== 'string') throw new Stop('manifest_invalid', `manifest entry ${quote(name)} has no url`);
    const path = sitePath(file.url);
    if (path === undefined) throw new Stop('path_outside', `manifest entry ${quote(name)} names ${quote(file.url)}, which is not a path on a site`);
    const headers = lowerKeys(file.headers);
    if (file.type === 'source_map') {
      if (!entries.has(name)) throw new Stop('manifest_invalid', `manifest entry ${quote(name)} is not in the bundle`);
      maps.push({ entry: name, path, debugId: normalizeDebugId(headers['debug-id']) });
    } else if (file.type === 'minified_source') {
      const ref = headers.sourcemap ?? headers['x-sourcemap'];
      const mapPath = typeof ref === 'string' ? resolveReference(path, ref) : undefined;
      if (mapPath !== undefined && !mapsBySource.has(mapPath)) mapsBySource.set(mapPath, path);
    }
  }

  // 3. The maps' sizes as declared, then their bytes.
  const refused: RefusedMap[] = [];
  const wanted = new Set<string>();
  let total = 0;
  for (const m of maps) {
    const size = declared(entries.get(m.entry)!);
    if (size > S.mapBytes) refused.push({ mapName: mapNameOf(m.path), reason: 'map_too_large', detail: `${size} bytes, more than ${S.mapBytes}` });
    else {
      total += size;
      wanted.add(m.entry);
    }
  }
  if (total > S.uploadBytes) throw new Stop('bundle_too_large', `its source maps come to ${total} bytes uncompressed, more than ${S.uploadBytes}`);
  let inflated = 0;
  const contents = wanted.size
    ? unzipSync(blob, {
        filter: (f) => {
          if (!wanted.has(f.name)) return false;
          inflated += declared(f);
          if (inflated > S.uploadBytes) throw new Stop('bundle_too_large', `more than ${S.uploadBytes} bytes uncompressed`);
          return true;
        },
      })
    : {};

  // 4. Each map checked, named and placed.
  const out: NewSourceMap[] = [];
  for (const m of maps) {
    const bytes = contents[m.entry];
    if (!bytes) continue; // refused above as too large
    const content = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const inspected = inspectSourceMap(content);
    const mapName = mapNameOf(m.path);
    if (inspected.kind === 'refused') {
      refused.push({ mapName, reason: inspected.reason, detail: inspected.detail });
      continue;
    }
    const servedPath = mapsBySource.get(m.path) ?? (m.path.endsWith('.map') ? m.path.slice(0, -4) : undefined);
    out.push({ mapName, servedPath, debugId: m.debugId ?? inspected.debugId, content });
  }
  return { kind: 'ok', maps: out, refused, files: names.length };
}

/** The bytes an entry may become: what it declares, and never less than what it holds (a stored entry is copied as is). */
const declared = (f: UnzipFileInfo) => Math.max(f.size, f.originalSize);

/**
 * A manifest url as the path a site serves it at: sentry-cli's `~/a/b.js` (any scheme and host) → `/a/b.js`, a full URL
 * → its path, anything else taken as a path. Undefined when it climbs out (`..`) or holds what no path holds.
 */
export function sitePath(url: string): string | undefined {
  if (url.length > MAX_PATH_CHARS) return undefined;
  let path: string;
  if (url.startsWith('~')) path = url.slice(1);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(url)) {
    try {
      path = new URL(url).pathname;
    } catch {
      return undefined;
    }
  } else path = url;
  path = path.split(/[?#]/, 1)[0]!;
  if (!path.startsWith('/')) path = `/${path}`;
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  if (/[\\\u0000-\u001f\u007f]/.test(decoded) || decoded.split('/').includes('..')) return undefined;
  // As a browser writes it (what an event's frame URL holds): `/a b.js` → `/a%20b.js`.
  return new URL(path, 'http://bundle.invalid').pathname;
}

/** A `sourceMappingURL` (relative to the file that names it, or absolute) as a site path; undefined for `data:` maps. */
function resolveReference(sourcePath: string, ref: string): string | undefined {
  if (ref.length > MAX_PATH_CHARS || /^data:/i.test(ref)) return undefined;
  try {
    const u = new URL(ref, `http://bundle.invalid${sourcePath}`);
    return sitePath(u.pathname);
  } catch {
    return undefined;
  }
}

/** Entry names are relative paths inside the bundle (`files/_/_/assets/index.js.map`). */
function safeEntryName(name: string): boolean {
  if (!name || name.length > MAX_PATH_CHARS || name.startsWith('/') || /[\\\u0000-\u001f\u007f]/.test(name)) return false;
  return !name.split('/').includes('..');
}

const mapNameOf = (path: string) => path.replace(/^\/+/, '').slice(0, 1_000) || 'map';

function lowerKeys(headers: unknown): Record<string, unknown> {
  if (!isObject(headers)) return {};
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const quote = (s: string) => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);
