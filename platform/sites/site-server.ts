import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../ports/relational-store.ts';

/**
 * Sites: a ready deploy's output, served as a static site by Host (issue 14 "Hosting"):
 * - `<slug>.<SITES_DOMAIN>` and the project's production domains: the live production deploy
 *   (projects.live_deploy_id: the newest ready production deploy, or a rollback's choice);
 * - `<deploy-id>.<SITES_DOMAIN>` (the id with `-` for `_`): that deploy, production or preview, once ready.
 * A directory serves its `index.html`; a missing file the site's own `404.html` or a plain 404; content types
 * by extension; long-lived caching only for hashed asset names (`app.3f9a2c1b.css`), revalidation for the rest.
 *
 * One implementation for whoever is the front door: the edge in the single process (ingest/), the API behind
 * a proxy (api/sites/). A deploy's artifact never changes once ready, so files are kept in memory (up to
 * FILE_CACHE_BYTES) and a Host's site for SITE_CACHE_MS: a rollback or a new live deploy shows within it.
 */
export interface SiteResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

/**
 * A Host that is a site: its project (null for a name under SITES_DOMAIN that no project or deploy has), and the
 * artifact directory it serves ('' while nothing is ready there).
 */
export interface Site {
  projectId: string | null;
  dir: string;
}

export interface SiteServer {
  /** The site a Host names, or undefined when the Host is not a site. */
  lookup(host: string): Promise<Site | undefined>;
  /** The answer for one request to a site. */
  serve(root: string, method: string, url: string): Promise<SiteResponse>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
};
/** A file name with a content hash in it (`app.3f9a2c1b.js`, `chunk-5d41402a.css`): safe to cache for a year. */
const HASHED_NAME = /[.-][0-9a-f]{8,}\.[a-z0-9]+$/i;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, max-age=0, must-revalidate';
const SITE_CACHE_MS = 2_000;
const SITE_CACHE_MAX = 10_000;
const FILE_CACHE_BYTES = 64 * 1024 * 1024;
const FILE_CACHE_MAX_FILE = 1024 * 1024;

export function createSiteServer(db: Queryable, sitesDomain: string): SiteServer {
  const suffix = `.${sitesDomain.toLowerCase()}`;
  const sites = new Map<string, { site: Site | undefined; at: number }>();
  /** Absolute path -> the file's answer (undefined: no such file). */
  const files = new Map<string, { body: Buffer; type: string; cache: string } | undefined>();
  let fileBytes = 0;

  type Row = { project_id: string; artifact_dir: string | null };
  const site = (row: Row | undefined): Site => ({ projectId: row?.project_id ?? null, dir: row?.artifact_dir ?? '' });

  async function resolve(hostname: string): Promise<Site | undefined> {
    if (hostname.endsWith(suffix)) {
      const label = hostname.slice(0, -suffix.length);
      if (!label || label.includes('.')) return undefined;
      if (label.startsWith('dep-')) {
        const r = await db.query<Row>(`SELECT project_id, CASE WHEN status = 'ready' THEN artifact_dir END AS artifact_dir FROM deploys WHERE id = $1`, [label.replace(/-/g, '_')]);
        return site(r.rows[0]);
      }
      const r = await db.query<Row>(
        `SELECT p.id AS project_id, d.artifact_dir FROM projects p LEFT JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready' WHERE p.slug = $1`,
        [label],
      );
      return site(r.rows[0]);
    }
    const r = await db.query<Row>(
      `SELECT p.id AS project_id, d.artifact_dir FROM projects p JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready' WHERE $1 = ANY(p.production_domains) LIMIT 1`,
      [hostname],
    );
    return r.rows[0] && site(r.rows[0]);
  }

  async function file(absolute: string): Promise<{ body: Buffer; type: string; cache: string } | undefined> {
    if (files.has(absolute)) return files.get(absolute);
    let target = absolute;
    if ((await stat(target).catch(() => undefined))?.isDirectory()) target = path.join(target, 'index.html');
    const body = await readFile(target).catch(() => undefined);
    const entry = body && { body, type: CONTENT_TYPES[path.extname(target).toLowerCase()] ?? 'application/octet-stream', cache: HASHED_NAME.test(target) ? IMMUTABLE : REVALIDATE };
    const size = body?.length ?? 0;
    if (size <= FILE_CACHE_MAX_FILE) {
      if (fileBytes + size > FILE_CACHE_BYTES) {
        files.clear();
        fileBytes = 0;
      }
      files.set(absolute, entry);
      fileBytes += size;
    }
    return entry;
  }

  const text = (status: number, message: string, extra: Array<[string, string]> = []): SiteResponse => ({
    status,
    headers: [['content-type', 'text/plain; charset=utf-8'], ['cache-control', 'no-store'], ...extra],
    body: Buffer.from(message),
  });

  return {
    async lookup(host) {
      const hostname = host.toLowerCase().replace(/:\d+$/, '');
      const now = Date.now();
      const hit = sites.get(hostname);
      if (hit && now - hit.at < SITE_CACHE_MS) return hit.site;
      const found = await resolve(hostname);
      if (sites.size >= SITE_CACHE_MAX) sites.clear();
      sites.set(hostname, { site: found, at: now });
      return found;
    },

    async serve(root, method, url) {
      if (method !== 'GET' && method !== 'HEAD') return text(405, 'method not allowed', [['allow', 'GET, HEAD']]);
      if (!root) return text(404, 'nothing is deployed here yet');
      let pathname: string;
      try {
        pathname = decodeURIComponent(url.split('?')[0]!);
      } catch {
        return text(400, 'bad path');
      }
      if (pathname.includes('\0')) return text(400, 'bad path');
      const absolute = path.join(root, path.posix.normalize(`/${pathname}`));
      if (absolute !== root && !absolute.startsWith(root + path.sep)) return text(404, 'not found');
      const found = await file(absolute);
      const head = method === 'HEAD';
      if (found) return { status: 200, headers: [['content-type', found.type], ['cache-control', found.cache], ['x-content-type-options', 'nosniff']], body: head ? Buffer.alloc(0) : found.body };
      const notFound = await file(path.join(root, '404.html'));
      if (notFound) return { status: 404, headers: [['content-type', CONTENT_TYPES['.html']!], ['cache-control', REVALIDATE]], body: head ? Buffer.alloc(0) : notFound.body };
      return text(404, 'not found');
    },
  };
}
