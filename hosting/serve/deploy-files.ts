import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import path from 'node:path';
import mime from 'mime-types';
import { boundedCache, SITE_CACHE_MAX } from '../../platform/sites/host-lookup.ts';
import { etagOf, SITE_DIR, SITE_FILE, type SiteManifest } from '../build/compile-site.ts';
import { type Encoding, SIBLING } from '../compress/precompress.ts';
import { loadRules, type SiteRules } from '../rules/match.ts';

/**
 * A deploy's files and rules as the server reads them. A deploy's artifact never changes once ready, so both are
 * kept in memory: its `.cx/site.json` (rules and manifest) per deploy in DEPLOY_CACHE_ENTRIES, and each file's
 * answer-ready facts (type, ETag, Last-Modified, encodings kept beside it) with the bytes of small ones, in a cache
 * bounded by entries and bytes, misses included. No link is ever followed out of an artifact (its real path must
 * stay inside it; the final open refuses links).
 * Never a file by path: `.cx/` (the server's), the `.br`/`.gz` siblings the build wrote, `_redirects` and `_headers`
 * (once compiled), and a source map unless the project opted in.
 */
const FILE_CACHE_BYTES = 64 * 1024 * 1024;
const FILE_CACHE_ENTRIES = 20_000;
export const FILE_CACHE_MAX_FILE = 1024 * 1024;
const MISS_COST = 512;
const DEPLOY_CACHE_ENTRIES = 500;
const DEPLOY_CACHE_BYTES = 64 * 1024 * 1024;

/** A file's facts as answered, and its bytes when small (a larger one is opened and streamed per request). */
export interface SiteFile {
  /** Its real path (opened again with O_NOFOLLOW to stream). */
  target: string;
  /** Its path in the artifact as asked for (`/`-separated): its siblings are this with `.br`/`.gz`. */
  rel: string;
  size: number;
  type: string;
  /** Quoted, as sent: strong from the manifest (or the bytes read), weak from size and mtime for a large old file. */
  etag: string;
  lastModified: string;
  mtimeSec: number;
  /** Encodings the build kept beside it (from the manifest). */
  enc: Encoding[];
  body?: Buffer;
  /** Its answers' headers per encoding, built on first use (serve-request.ts headersOf). */
  answers?: Record<string, Array<[string, string]>>;
}

/** What a deploy's `.cx/site.json` gave the server; none (a deploy from before it): no rules, no siblings. */
export interface DeployMeta {
  rules: SiteRules | undefined;
  files: Map<string, SiteManifest['files'][string]> | undefined;
}

const NO_META: DeployMeta = { rules: undefined, files: undefined };

/** Content types from mime-types' table (mime-db), with the charset for text; unknown: octet-stream. */
export function typeOf(file: string): string {
  return mime.contentType(path.extname(file).toLowerCase() || 'bin') || 'application/octet-stream';
}

/** `app.js.map`, `styles.css.MAP`: a source map by its name (the form every bundler writes). */
export function isSourceMap(file: string): boolean {
  return /\.map$/i.test(file);
}

export function createDeployFiles() {
  const files = boundedCache<SiteFile | 'dir' | null>(FILE_CACHE_ENTRIES, FILE_CACHE_BYTES);
  const metas = boundedCache<DeployMeta>(DEPLOY_CACHE_ENTRIES, DEPLOY_CACHE_BYTES);
  const loading = new Map<string, Promise<DeployMeta>>();
  const realRoots = new Map<string, string>();

  async function realRoot(root: string): Promise<string | undefined> {
    let real = realRoots.get(root);
    if (real === undefined) {
      real = await realpath(root).catch(() => '');
      if (realRoots.size >= SITE_CACHE_MAX) realRoots.clear();
      realRoots.set(root, real);
    }
    return real || undefined;
  }

  /** A deploy's rules and manifest, read once (one read at a time per deploy). */
  function meta(root: string): DeployMeta | Promise<DeployMeta> {
    const hit = metas.get(root);
    if (hit) return hit;
    let pending = loading.get(root);
    if (!pending) {
      pending = readMeta(root)
        .then(({ meta, cost }) => {
          metas.set(root, meta, cost);
          return meta;
        })
        .finally(() => loading.delete(root));
      loading.set(root, pending);
    }
    return pending;
  }

  async function readMeta(root: string): Promise<{ meta: DeployMeta; cost: number }> {
    const real = await realRoot(root);
    const handle = real && (await open(path.join(real, SITE_FILE), constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined));
    if (!handle) return { meta: NO_META, cost: 1 };
    try {
      const text = await handle.readFile('utf8');
      const m = JSON.parse(text) as SiteManifest;
      if (m.version !== 1) return { meta: NO_META, cost: 1 };
      return { meta: { rules: loadRules(m.redirects, m.headers), files: new Map(Object.entries(m.files)) }, cost: text.length * 2 };
    } catch {
      return { meta: NO_META, cost: 1 };
    } finally {
      await handle.close();
    }
  }

  /** A path the site never serves as a file (see the header). */
  function hidden(rel: string, m: DeployMeta, serveSourceMaps: boolean): boolean {
    if (rel === SITE_DIR || rel.startsWith(`${SITE_DIR}/`)) return true;
    if (isSourceMap(rel) && !serveSourceMaps) return true;
    if (!m.files) return false;
    if (rel === '_redirects' || rel === '_headers') return true;
    for (const enc of ['br', 'gzip'] as const) {
      const ext = SIBLING[enc];
      if (rel.endsWith(ext) && m.files.get(rel.slice(0, -ext.length))?.enc?.includes(enc)) return true;
    }
    return false;
  }

  /**
   * The file at `rel` (relative to the artifact, `/`-separated, normalized), or 'dir' when it is a directory, or
   * null. A directory is never a file here: the request path decides what of it serves (serve-request.ts).
   */
  function fileAt(root: string, rel: string, m: DeployMeta, serveSourceMaps: boolean): Promise<SiteFile | 'dir' | null> | SiteFile | 'dir' | null {
    if (hidden(rel, m, serveSourceMaps)) return null;
    return lookup(root, rel, m);
  }

  /** The file of a sibling encoding of `f` (never hidden: the server asks for it, not the path). */
  function sibling(root: string, rel: string, enc: Encoding, m: DeployMeta): Promise<SiteFile | 'dir' | null> | SiteFile | 'dir' | null {
    return lookup(root, rel + SIBLING[enc], m);
  }

  function lookup(root: string, rel: string, m: DeployMeta): Promise<SiteFile | 'dir' | null> | SiteFile | 'dir' | null {
    const key = `${root}\0${rel}`;
    const hit = files.get(key);
    if (hit !== undefined) return hit;
    return readFileAt(root, rel, m).then((f) => {
      files.set(key, f, (f && f !== 'dir' ? (f.body?.length ?? 256) : MISS_COST) + key.length);
      return f;
    });
  }

  async function readFileAt(root: string, rel: string, m: DeployMeta): Promise<SiteFile | 'dir' | null> {
    const realRootDir = await realRoot(root);
    if (!realRootDir) return null;
    const target = await realpath(path.join(root, rel)).catch(() => undefined);
    if (!target || (target !== realRootDir && !target.startsWith(realRootDir + path.sep))) return null;
    if ((await lstat(target).catch(() => undefined))?.isDirectory()) return 'dir';
    const handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
    if (!handle) return null;
    try {
      const st = await handle.stat();
      if (!st.isFile()) return null;
      const known = m.files?.get(rel);
      const body = st.size <= FILE_CACHE_MAX_FILE ? await handle.readFile() : undefined;
      const etag =
        known && known.size === st.size ? `"${known.etag}"` : body ? `"${etagOf(body)}"` : `W/"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
      const mtimeSec = Math.floor(st.mtimeMs / 1000);
      return {
        target,
        rel,
        size: st.size,
        type: typeOf(target),
        etag,
        lastModified: new Date(mtimeSec * 1000).toUTCString(),
        mtimeSec,
        enc: known?.enc ?? [],
        body,
      };
    } finally {
      await handle.close();
    }
  }

  return {
    meta,
    fileAt,
    sibling,
    /** A large file opened again to stream (its real path, no link followed). */
    openStream: (f: SiteFile) => open(f.target, constants.O_RDONLY | constants.O_NOFOLLOW),
    get stats() {
      return { entries: files.size, bytes: files.bytes };
    },
  };
}

export type DeployFiles = ReturnType<typeof createDeployFiles>;
