import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../../platform/platform.ts';

/**
 * Sites: a ready deploy's output, served as a static site by Host (issue 14 "Hosting"), before any API route:
 * - `<slug>.<SITES_DOMAIN>` and the project's production domains: the live production deploy
 *   (projects.live_deploy_id: the newest ready production deploy, or a rollback's choice);
 * - `<deploy-id>.<SITES_DOMAIN>` (the id with `-` for `_`): that deploy, production or preview, once ready.
 * `SITES_DOMAIN` defaults to `localhost`, so `http://demo.localhost:8080/` opens in a browser with no DNS set up.
 * A directory serves its `index.html`; a missing file the site's own `404.html` or a plain 404; content types by
 * extension; long-lived caching only for hashed asset names (`app.3f9a2c1b.css`), revalidation for the rest.
 */
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

export function installSiteHosting(app: FastifyInstance, platform: Platform): void {
  const suffix = `.${platform.config.SITES_DOMAIN.toLowerCase()}`;

  /**
   * Host -> what it serves, for SITE_CACHE_MS: every API request passes here too (its Host is not a site), and a
   * rollback or a new ready deploy reaches the sites within that time.
   */
  const cache = new Map<string, { dir: string | undefined; at: number }>();
  async function siteOfCached(host: string): Promise<string | undefined> {
    const hostname = host.toLowerCase().replace(/:\d+$/, '');
    const now = Date.now();
    const hit = cache.get(hostname);
    if (hit && now - hit.at < SITE_CACHE_MS) return hit.dir;
    const dir = await siteOf(hostname);
    if (cache.size >= SITE_CACHE_MAX) cache.clear();
    cache.set(hostname, { dir, at: now });
    return dir;
  }

  /** The artifact directory a Host serves ('' when it is a site with nothing ready), or undefined when it is not a site. */
  async function siteOf(hostname: string): Promise<string | undefined> {
    if (hostname.endsWith(suffix)) {
      const label = hostname.slice(0, -suffix.length);
      if (!label || label.includes('.')) return undefined;
      if (label.startsWith('dep-')) {
        const r = await platform.db.query<{ artifact_dir: string | null }>(`SELECT artifact_dir FROM deploys WHERE id = $1 AND status = 'ready'`, [label.replace(/-/g, '_')]);
        return r.rows[0]?.artifact_dir ?? '';
      }
      const r = await platform.db.query<{ artifact_dir: string | null }>(
        `SELECT d.artifact_dir FROM projects p LEFT JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready' WHERE p.slug = $1`,
        [label],
      );
      return r.rows[0] ? (r.rows[0].artifact_dir ?? '') : '';
    }
    const r = await platform.db.query<{ artifact_dir: string | null }>(
      `SELECT d.artifact_dir FROM projects p JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready' WHERE $1 = ANY(p.production_domains) LIMIT 1`,
      [hostname],
    );
    return r.rows[0]?.artifact_dir ?? undefined;
  }

  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host;
    if (!host) return;
    const dir = await siteOfCached(host);
    if (dir === undefined) return; // not a site: the API answers
    if (request.method !== 'GET' && request.method !== 'HEAD') return sendText(reply, 405, 'method not allowed', { allow: 'GET, HEAD' });
    if (!dir) return sendText(reply, 404, 'nothing is deployed here yet');
    await serveFile(request, reply, dir);
  });
}

async function serveFile(request: FastifyRequest, reply: FastifyReply, root: string): Promise<FastifyReply> {
  let pathname: string;
  try {
    pathname = decodeURIComponent(request.url.split('?')[0]!);
  } catch {
    return sendText(reply, 400, 'bad path');
  }
  if (pathname.includes('\0')) return sendText(reply, 400, 'bad path');
  const file = path.join(root, path.posix.normalize(`/${pathname}`));
  if (!file.startsWith(root)) return sendText(reply, 404, 'not found');
  let target = file;
  const s = await stat(target).catch(() => undefined);
  if (s?.isDirectory()) target = path.join(target, 'index.html');
  const body = await readFile(target).catch(() => undefined);
  if (!body) {
    const notFound = await readFile(path.join(root, '404.html')).catch(() => undefined);
    if (notFound) return reply.code(404).header('content-type', CONTENT_TYPES['.html']).header('cache-control', REVALIDATE).send(request.method === 'HEAD' ? undefined : notFound);
    return sendText(reply, 404, 'not found');
  }
  const type = CONTENT_TYPES[path.extname(target).toLowerCase()] ?? 'application/octet-stream';
  return reply
    .code(200)
    .header('content-type', type)
    .header('cache-control', HASHED_NAME.test(target) ? IMMUTABLE : REVALIDATE)
    .header('x-content-type-options', 'nosniff')
    .send(request.method === 'HEAD' ? undefined : body);
}

function sendText(reply: FastifyReply, status: number, text: string, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(status).headers({ 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers }).send(text);
}
