import type { FastifyReply, FastifyRequest } from 'fastify';
import { ServiceError } from '../../schemas/error-codes.ts';

/**
 * The small HTML pages of the public subscriber routes, for a browser: a form post from the status page without
 * script, a link opened from a mail. Everything shown is escaped; no script, no outside resources, light and dark.
 */
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A browser asked (it accepts HTML), or a form was posted: answer a page rather than JSON. */
export function wantsHtml(request: FastifyRequest): boolean {
  const type = String(request.headers['content-type'] ?? '');
  if (request.method === 'POST' && type.startsWith('application/x-www-form-urlencoded') && !type.includes('json')) return !isOneClick(request);
  return /\btext\/html\b/.test(String(request.headers.accept ?? ''));
}

/** A mail client's RFC 8058 one-click POST: it reads no page. */
const isOneClick = (request: FastifyRequest) => (request.body as Record<string, unknown> | null | undefined)?.['List-Unsubscribe'] === 'One-Click';

/** A page of a heading, a few paragraphs, and optionally one button that posts to `action`. */
export function smallPage(title: string, paragraphs: string[], form?: { action: string; button: string }): string {
  const body = paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('');
  const button = form ? `<form method="post" action="${escapeHtml(form.action)}"><button type="submit">${escapeHtml(form.button)}</button></form>` : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a;background:#fff}@media (prefers-color-scheme:dark){body{color:#eee;background:#111}}button{font:inherit;padding:.4rem 1rem}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}${button}</main></body></html>`;
}

/** Send a page with this status. */
export function sendPage<R extends FastifyReply>(reply: R, status: number, html: string): R {
  reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html);
  return reply;
}

/** A refusal as a page (its status, and Retry-After on a 429), for a browser. */
export function refusalPage<R extends FastifyReply>(reply: R, err: ServiceError): R {
  if (err.extra.retryAfterSec !== undefined) reply.header('retry-after', String(err.extra.retryAfterSec));
  const title = err.status === 429 ? 'Too many tries' : err.status === 404 ? 'Not found' : 'That did not work';
  return sendPage(reply, err.status, smallPage(title, [err.message]));
}

/** A public route's answer: `run` sends HTML to a browser and JSON otherwise; a refusal to a browser is a page too. */
export async function pageOrJson(request: FastifyRequest, reply: FastifyReply, run: (html: boolean) => Promise<unknown>): Promise<void> {
  const html = wantsHtml(request);
  try {
    await run(html);
  } catch (err) {
    if (html && err instanceof ServiceError) return void refusalPage(reply, err);
    throw err;
  }
}
