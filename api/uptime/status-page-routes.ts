import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl, type Config } from '../../platform/config.ts';
import { routePath } from '../../schemas/api/client.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { type BadgeWindow, monitorBadge, overallBadge } from './status-badge.ts';
import { renderStatusFeed } from './status-feed.ts';
import { renderStatusHtml, renderStatusNotFoundHtml, STATUS_PAGE_CSP } from './status-html.ts';
import type { StatusAnswer, StatusSource } from './status-route.ts';
import { viewOf } from './status-view.ts';

/**
 * The status page people read (issue 43 "The page", "Subscribing"), each route top to bottom like the JSON's
 * (status-route.ts), and from the same computed object:
 *   1. rate limit  the caller IP's status budget (shared with the JSON)                    429 rate_limited
 *   2. status      the slug's computed status, from the JSON's cache (none: 404 not_found)
 *   3. render      once per version of the JSON (its ETag) and variant, kept beside it (bounded); own ETag
 *   4. answer      `If-None-Match` with the same ETag: 304; `Cache-Control: public, max-age=5` as the JSON
 * `GET /status/:slug` (HTML, no script, a CSP that allows none; an unknown slug's 404 is a page too for a browser, one
 * whose Accept names text/html, and the JSON error for every other client), `GET /v1/status/:slug/badge.svg`
 * (`?monitor=&window=`), `GET /v1/status/:slug/feed.atom`. A verified custom domain that serves the status page
 * answers its `/` with statusPageAnswer (api/sites/site-hosting.ts).
 */
const MAX_RENDERED = 1000;

export interface Rendered {
  body: string;
  etag: string;
}

/** What a status page answers: its headers and body, or 304 when `ifNoneMatch` holds. */
export interface PageAnswer {
  status: 200 | 304;
  headers: Record<string, string>;
  body: string;
}

const etagOf = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': STATUS_PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};
const BADGE_HEADERS = {
  'content-type': 'image/svg+xml; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
  'x-content-type-options': 'nosniff',
  'access-control-allow-origin': '*',
};
const FEED_HEADERS = { 'content-type': 'application/atom+xml; charset=utf-8', 'x-content-type-options': 'nosniff', 'access-control-allow-origin': '*' };

type RendererConfig = { config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT'> };

/** Renders kept per variant and slug, valid while the JSON's ETag is the one they were made from. */
export function createStatusRenderer(platform: RendererConfig, source: StatusSource) {
  const rendered = new Map<string, Rendered & { from: string }>();
  const base = publicBaseUrl(platform.config);

  /** Step 3: the variant's bytes for this version of the JSON, made at most once. */
  function render(key: string, answer: StatusAnswer, make: () => string | undefined): Rendered | undefined {
    const kept = rendered.get(key);
    if (kept && kept.from === answer.etag) return kept;
    const body = make();
    if (body === undefined) return undefined;
    const fresh = { body, etag: etagOf(body), from: answer.etag };
    rendered.delete(key);
    if (rendered.size >= MAX_RENDERED) rendered.delete(rendered.keys().next().value!);
    rendered.set(key, fresh);
    return fresh;
  }

  /** Step 4: 304 when the caller holds this ETag. */
  const answer = (r: Rendered, headers: Record<string, string>, ifNoneMatch: string | undefined): PageAnswer => {
    const all = { ...headers, 'cache-control': `public, max-age=${LIMITS.uptime.statusCacheMs / 1000}`, etag: r.etag };
    return ifNoneMatch === r.etag ? { status: 304, headers: all, body: '' } : { status: 200, headers: all, body: r.body };
  };

  /** Step 2: the slug's status, or 404. */
  async function statusOf(slug: string): Promise<StatusAnswer> {
    const found = await source.get(slug);
    if (!found) throw new ServiceError('not_found', 'no such status page');
    return found;
  }

  return {
    async page(rawSlug: string, ifNoneMatch: string | undefined): Promise<PageAnswer> {
      const slug = rawSlug.toLowerCase();
      const found = await statusOf(slug);
      const links = {
        subscribe: routePath('subscribeToStatus', { slug }),
        feed: routePath('statusFeed', { slug }),
        json: routePath('publicStatus', { slug }),
      };
      return answer(render(`page:${slug}`, found, () => renderStatusHtml(viewOf(found.status), slug, links))!, PAGE_HEADERS, ifNoneMatch);
    },
    async badge(rawSlug: string, q: { monitor?: string; window: BadgeWindow }, ifNoneMatch: string | undefined): Promise<PageAnswer> {
      const slug = rawSlug.toLowerCase();
      const found = await statusOf(slug);
      const view = viewOf(found.status);
      const r = q.monitor
        ? render(`badge:${slug}:${q.monitor}:${q.window}`, found, () => monitorBadge(view, q.monitor!, q.window))
        : render(`badge:${slug}`, found, () => overallBadge(view));
      if (!r) throw new ServiceError('not_found', 'no such public monitor on this status page');
      return answer(r, BADGE_HEADERS, ifNoneMatch);
    },
    async feed(rawSlug: string, ifNoneMatch: string | undefined): Promise<PageAnswer> {
      const slug = rawSlug.toLowerCase();
      const found = await statusOf(slug);
      const links = { page: `${base}${routePath('statusPage', { slug })}`, self: `${base}${routePath('statusFeed', { slug })}` };
      return answer(render(`feed:${slug}`, found, () => renderStatusFeed(viewOf(found.status), slug, links))!, FEED_HEADERS, ifNoneMatch);
    },
    get size() {
      return rendered.size;
    },
  };
}

export type StatusRenderer = ReturnType<typeof createStatusRenderer>;
const perSource = new WeakMap<StatusSource, StatusRenderer>();

/** One renderer per status source (per platform): the routes and a custom domain's page share its renders. */
export function statusRendererOf(platform: RendererConfig, source: StatusSource): StatusRenderer {
  let r = perSource.get(source);
  if (!r) {
    r = createStatusRenderer(platform, source);
    perSource.set(source, r);
  }
  return r;
}

export const ifNoneMatchOf = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h);

/** Step 4 on the wire: the answer's status, headers and body (none with a 304). */
export function sendAnswer(reply: FastifyReply, a: PageAnswer) {
  if (a.status === 304) {
    // No body, so no type: the validators and caching only (a type with an empty body would be serialized).
    const { 'content-type': _type, ...validators } = a.headers;
    return reply.code(304).headers(validators).send();
  }
  return reply
    .code(200)
    .headers(a.headers)
    .send(a.body as never);
}

/** A browser's navigation (its Accept names text/html); curl's and fetch's `*\/*` do not. */
function acceptsHtml(accept: string | undefined): boolean {
  return accept !== undefined && accept.toLowerCase().includes('text/html');
}

export function statusPageRoutes(platform: RendererConfig, source: StatusSource): FastifyPluginAsyncZod {
  const renderer = statusRendererOf(platform, source);
  return async (app) => {
    app.route({
      ...declared('statusPage'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await source.limit(request.ip);
        try {
          const a = await renderer.page(request.params.slug, ifNoneMatchOf(request.headers['if-none-match']));
          return sendAnswer(reply, a);
        } catch (err) {
          if (!(err instanceof ServiceError && err.code === 'not_found' && acceptsHtml(request.headers.accept))) throw err;
          return reply
            .code(404)
            .headers({ ...PAGE_HEADERS, 'cache-control': 'no-store' })
            .send(renderStatusNotFoundHtml(request.params.slug) as never);
        }
      },
    });

    app.route({
      ...declared('statusBadge'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await source.limit(request.ip);
        const a = await renderer.badge(request.params.slug, request.query, ifNoneMatchOf(request.headers['if-none-match']));
        return sendAnswer(reply, a);
      },
    });

    app.route({
      ...declared('statusFeed'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        await source.limit(request.ip);
        const a = await renderer.feed(request.params.slug, ifNoneMatchOf(request.headers['if-none-match']));
        return sendAnswer(reply, a);
      },
    });
  };
}
