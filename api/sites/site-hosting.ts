import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../../platform/platform.ts';
import type { IncomingMessage } from 'node:http';
import { AUTH_BODY_MAX, siteServerOf, type SiteServer } from '../../hosting/serve/site-server.ts';
import { routePath } from '../../schemas/api/client.ts';
import { ifNoneMatchOf, sendAnswer, statusRendererOf } from '../uptime/status-page-routes.ts';
import { statusSourceOf } from '../uptime/status-route.ts';

/**
 * Sites behind a reverse proxy: a request whose Host is a site (hosting/serve/site-server.ts) is answered with
 * the site's file before any API route or the auth hook. In the single process the edge answers site hosts
 * itself (ingest/single-process-proxy.ts), so they seldom get here, and the shared site server (siteServerOf)
 * answers a Host the edge found no site from its cache. Hosts that are no site are limited per client address.
 * A POST to a protected preview (its password form) is read here, at most AUTH_BODY_MAX bytes, before any parser.
 */
export function installSiteHosting(app: FastifyInstance, platform: Platform, sites: SiteServer = siteServerOf(platform)): void {
  app.addHook('onRequest', async (request, reply) => {
    const host = request.headers.host;
    if (!host) return;
    // request.ip: the socket's address, or the proxy's X-Forwarded-For entry under TRUST_PROXY (a 429 past the limit).
    const site = await sites.lookup(host, request.ip);
    if (site === undefined) return; // not a site: the API answers
    if (site.statusSlug && !site.limited) return statusDomain(platform, request, reply, site.statusSlug);
    const body = request.method === 'POST' && site.protection ? await readSmallBody(request.raw) : undefined;
    const res = await sites.serve(site.dir, request.method, request.url, site, request.headers, { body, clientIp: request.ip });
    for (const [k, v] of res.headers) reply.header(k, v);
    if ('file' in res) {
      const start = res.start ?? 0;
      const stream = res.file.createReadStream({ start, end: start + Math.max(res.size, 1) - 1 });
      return reply.code(res.status).header('content-length', String(res.size)).send(stream);
    }
    return reply.code(res.status).send(res.body);
  });
}

/**
 * A custom domain that serves a status page (issue 43): `/` is the page (as `GET /status/:slug`), the page's own
 * public routes under the status JSON's path (its feed, badge, JSON, the subscribe form's post) answer as on the
 * service's host; anything else is 404.
 */
async function statusDomain(platform: Platform, request: FastifyRequest, reply: FastifyReply, slug: string) {
  const path = request.url.split('?')[0]!;
  const own = routePath('publicStatus', { slug });
  if (path === own || path.startsWith(`${own}/`)) return; // the API's public status routes answer
  if (path !== '/' || (request.method !== 'GET' && request.method !== 'HEAD'))
    return reply.code(404).send({ error: 'not_found', message: 'a status domain serves its page at / only' });
  const source = statusSourceOf(platform);
  await source.limit(request.ip);
  return sendAnswer(reply, await statusRendererOf(platform, source).page(slug, ifNoneMatchOf(request.headers['if-none-match'])));
}

/** The first AUTH_BODY_MAX bytes of a body; the rest is read and dropped (the answer does not wait for a slow client's). */
function readSmallBody(raw: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(Buffer.concat(chunks));
    raw.on('data', (c: Buffer) => {
      if (size >= AUTH_BODY_MAX) return;
      chunks.push(c.subarray(0, AUTH_BODY_MAX - size));
      size += Math.min(c.length, AUTH_BODY_MAX - size);
      if (size >= AUTH_BODY_MAX) done();
    });
    raw.on('end', done);
    raw.on('error', done);
  });
}
