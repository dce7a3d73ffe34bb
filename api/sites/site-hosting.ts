import type { FastifyInstance } from 'fastify';
import type { Platform } from '../../platform/platform.ts';
import { siteServerOf, type SiteServer } from '../../hosting/serve/site-server.ts';

/**
 * Sites behind a reverse proxy: a request whose Host is a site (hosting/serve/site-server.ts) is answered with
 * the site's file before any API route or the auth hook. In the single process the edge answers site hosts
 * itself (ingest/single-process-proxy.ts), so they seldom get here, and the shared site server (siteServerOf)
 * answers a Host the edge found no site from its cache. Hosts that are no site are limited per client address.
 */
export function installSiteHosting(app: FastifyInstance, platform: Platform, sites: SiteServer = siteServerOf(platform)): void {
  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host;
    if (!host) return;
    // request.ip: the socket's address, or the proxy's X-Forwarded-For entry under TRUST_PROXY (a 429 past the limit).
    const site = await sites.lookup(host, request.ip);
    if (site === undefined) return; // not a site: the API answers
    const res = await sites.serve(site.dir, request.method, request.url, site, request.headers);
    for (const [k, v] of res.headers) reply.header(k, v);
    if ('file' in res) {
      const start = res.start ?? 0;
      const stream = res.file.createReadStream({ start, end: start + Math.max(res.size, 1) - 1 });
      return reply.code(res.status).header('content-length', String(res.size)).send(stream);
    }
    return reply.code(res.status).send(res.body);
  });
}
