import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AUTH } from '../auth/route-auth.ts';
import { CONSOLE_ASSET_PREFIX, type ConsoleBundle } from './console-assets.ts';

/**
 * The console's pages and files. The console is an ordinary client of the `/v1` API (§1): these routes serve only
 * its HTML and bundle; every action it takes is a documented `/v1` call with the session cookie.
 *
 * - `/`, `/sign-in`, `/cli/device`, `/oauth/authorize` (MCP consent), `/projects` and `/projects/*`: index.html (the console routes in the browser);
 *   `/projects/:slug/errors` is also the link alert emails carry, `/cli/device?user_code=` the CLI's verification URL.
 * - `/console/assets/<name>.<hash>.(js|css)`: the bundle, cached for a year, gzip when the client takes it.
 *
 * The pages carry a strict Content-Security-Policy (own scripts and styles only, no framing).
 */
export const CONSOLE_PAGES = ['/', '/sign-in', '/cli/device', '/oauth/authorize', '/projects', '/projects/*'];

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-cache',
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

export function consoleRoutes(bundle: ConsoleBundle): FastifyPluginAsync {
  return async (app) => {
    const page = async (_request: FastifyRequest, reply: FastifyReply) => reply.headers(PAGE_HEADERS).send(bundle.indexHtml);
    for (const url of CONSOLE_PAGES) app.get(url, { config: { auth: AUTH.public }, schema: { hide: true } }, page);

    app.get<{ Params: { name: string } }>(`${CONSOLE_ASSET_PREFIX}:name`, { config: { auth: AUTH.public }, schema: { hide: true } }, async (request, reply) => {
      const asset = bundle.assets.get(request.params.name);
      if (!asset) return reply.code(404).send({ error: 'not_found', message: 'no such console file' });
      reply.headers({
        'content-type': asset.contentType,
        'cache-control': 'public, max-age=31536000, immutable',
        vary: 'Accept-Encoding',
        'x-content-type-options': 'nosniff',
      });
      if (/\bgzip\b/i.test(String(request.headers['accept-encoding'] ?? ''))) return reply.header('content-encoding', 'gzip').send(asset.gzip);
      return reply.send(asset.body);
    });
  };
}
