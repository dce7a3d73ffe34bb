import { createHmac } from 'node:crypto';
import { verifyPassword } from '../../platform/passwords.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { RateLimiter } from '../../platform/ports/rate-limiter.ts';
import { addressKey, type PreviewProtection } from '../../platform/sites/host-lookup.ts';
import { sitesRepository } from '../../platform/sites/sites-repository.ts';
import { constantTimeEqual, tokenHash } from '../../platform/tokens.ts';
import { PREVIEW_SHARE_PREFIX } from '../../schemas/api/projects.ts';
import type { RequestHeaders, SiteResponse } from './serve-request.ts';

/**
 * Previews that only the team sees (issue 42): a protected per-deploy host answers its files only to a browser that
 * holds this host's cookie; anything else gets the password page (401). Read top to bottom:
 *   1. `POST /.cx/auth` (form: password, next): limited per client address and host, and per address and project
 *      (AUTH_ATTEMPTS, 429 past it);
 *      the project's password right -> the cookie and 303 to `next` (a path on this host); wrong -> 401 page;
 *   2. `GET /.cx/share/<token>`: a share link (api/projects/preview-links-routes.ts) that still opens the project's
 *      previews -> the cookie (bound to the link: revoking it ends the cookie within the site cache's 2 s) and 303
 *      to `/`; else the 401 page. Counted on the same budget as passwords;
 *   3. any other request: a valid cookie -> served (undefined here); else the 401 page, never the file (HEAD and Range
 *      too: the page answers before the file is looked at).
 * The cookie (`__cx_preview`) is host-only (no Domain), HttpOnly, SameSite=Lax, Secure behind https, and its value
 * is signed with the project's key (HMAC-SHA256) over project, host, expiry and the password's version or the link's
 * id: a cookie of another host or project, a forged or expired one, or one from before the password changed is
 * refused. Every refusal is counted by reason (stats).
 */
export const COOKIE = '__cx_preview';
export const AUTH_PATH = '/.cx/auth';
export const SHARE_PREFIX = PREVIEW_SHARE_PREFIX;
/**
 * Password tries and share-link opens per client address (IPv6: its /64) and host, and per address and project (one
 * password opens all of a project's previews: its many hosts do not multiply the tries).
 */
export const AUTH_ATTEMPTS = { perAddressHost: 10, perAddressProject: 30, windowMs: 60_000 };
/** A form post to AUTH_PATH is read to at most this many bytes (the front doors stop reading past it). */
export const AUTH_BODY_MAX = 4096;
/** How long a password cookie lasts; a share link's lasts until the link expires, at most as long. */
export const COOKIE_TTL_SEC = 7 * 24 * 3600;

export type GateRefusal = 'no_cookie' | 'bad_cookie' | 'wrong_password' | 'no_password' | 'bad_link' | 'limited' | 'bad_form';

export interface GateRequest {
  host: string;
  method: string;
  url: string;
  headers: RequestHeaders;
  body?: Buffer;
  clientIp?: string;
}

interface CookieClaims {
  p: string;
  h: string;
  e: number;
  /** `pw`: the password's version in v; `share`: the link's id in v. */
  k: 'pw' | 'share';
  v: string | number;
}

export function createPreviewGate(deps: { db: Queryable; limiter?: Pick<RateLimiter, 'hit'>; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const refused: Record<GateRefusal, number> = { no_cookie: 0, bad_cookie: 0, wrong_password: 0, no_password: 0, bad_link: 0, limited: 0, bad_form: 0 };
  const refuse = (why: GateRefusal, res: SiteResponse): SiteResponse => {
    refused[why]++;
    return res;
  };

  /** The answer when the request may not see the site; undefined when it may (the file is served as usual). */
  async function check(projectId: string, p: PreviewProtection, r: GateRequest): Promise<SiteResponse | undefined> {
    const q = r.url.indexOf('?');
    const pathname = q === -1 ? r.url : r.url.slice(0, q);
    const secure = header(r.headers, 'x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
    const cookie = (claims: CookieClaims) => setCookie(p.key, claims, secure, now());

    // 1. a password
    if (pathname === AUTH_PATH && r.method === 'POST') {
      const limited = await overBudget(r, projectId);
      if (limited) return refuse('limited', page(429, p, 'Too many tries. Wait a minute and try again.', '/', [['retry-after', String(limited)]]));
      const form = new URLSearchParams((r.body ?? Buffer.alloc(0)).subarray(0, AUTH_BODY_MAX).toString('utf8'));
      const next = safeNext(form.get('next'));
      const password = form.get('password') ?? '';
      if (!password || password.length > 1024) return refuse('bad_form', page(401, p, 'Type the password.', next));
      if (!p.passwordHash || !p.key) return refuse('no_password', page(401, p, 'This preview has no password: ask the team for a share link.', next));
      if (!(await verifyPassword(password, p.passwordHash))) return refuse('wrong_password', page(401, p, 'Wrong password.', next));
      const claims: CookieClaims = { p: projectId, h: r.host, e: Math.floor(now() / 1000) + COOKIE_TTL_SEC, k: 'pw', v: p.passwordVersion };
      return seeOther(next, cookie(claims));
    }

    // 2. a share link
    if (pathname.startsWith(SHARE_PREFIX) && (r.method === 'GET' || r.method === 'HEAD')) {
      const limited = await overBudget(r, projectId);
      if (limited) return refuse('limited', page(429, p, 'Too many tries. Wait a minute and try again.', '/', [['retry-after', String(limited)]]));
      const token = pathname.slice(SHARE_PREFIX.length);
      const link = token.length <= 200 && p.key ? await sitesRepository.previewLink(deps.db, projectId, tokenHash(token)) : undefined;
      if (!link) return refuse('bad_link', page(401, p, 'This share link has expired or was revoked: ask the team for a new one.', '/'));
      const until = Math.min(Math.floor(new Date(link.expires_at).getTime() / 1000), Math.floor(now() / 1000) + COOKIE_TTL_SEC);
      return seeOther('/', cookie({ p: projectId, h: r.host, e: until, k: 'share', v: link.id }));
    }

    // 3. anything else: the cookie, or the page
    const values = cookieValues(header(r.headers, 'cookie'));
    if (values.length === 0) return refuse('no_cookie', page(401, p, undefined, safeNext(r.url)));
    if (values.some((v) => valid(v, projectId, p, r.host))) return undefined;
    return refuse('bad_cookie', page(401, p, undefined, safeNext(r.url)));
  }

  function valid(value: string, projectId: string, p: PreviewProtection, host: string): boolean {
    if (!p.key) return false;
    const dot = value.indexOf('.');
    if (dot <= 0) return false;
    const payload = value.slice(0, dot);
    if (!constantTimeEqual(value.slice(dot + 1), sign(p.key, payload))) return false;
    let c: CookieClaims;
    try {
      c = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as CookieClaims;
    } catch {
      return false;
    }
    if (c.p !== projectId || c.h !== host || !(c.e * 1000 > now())) return false;
    if (c.k === 'pw') return p.passwordHash !== null && c.v === p.passwordVersion;
    return c.k === 'share' && typeof c.v === 'string' && p.linkIds.includes(c.v);
  }

  /** Seconds to wait when the client is past AUTH_ATTEMPTS for this host; 0 when it may try (or the limiter is away). */
  async function overBudget(r: GateRequest, projectId: string): Promise<number> {
    const limiter = deps.limiter;
    if (!limiter) return 0;
    const who = addressKey(r.clientIp ?? 'unknown');
    for (const [key, limit] of [
      [`preview-auth:${who}:${r.host}`, AUTH_ATTEMPTS.perAddressHost],
      [`preview-auth:${who}:${projectId}`, AUTH_ATTEMPTS.perAddressProject],
    ] as const) {
      const d = await limiter.hit(key, limit, AUTH_ATTEMPTS.windowMs).catch(() => undefined);
      if (d && !d.allowed) return Math.max(1, d.retryAfterSec);
    }
    return 0;
  }

  return {
    check,
    get stats(): Record<GateRefusal, number> {
      return { ...refused };
    },
  };
}

/** A protected answer that was served: never kept by a shared cache (it is this browser's), and varies by cookie. */
export function privateAnswer(res: SiteResponse): SiteResponse {
  const headers = res.headers.map(([k, v]): [string, string] =>
    k === 'cache-control' ? [k, v.replace(/\bpublic\b/, 'private').replace(/,?\s*immutable\b/, '')] : [k, v],
  );
  const vary = headers.findIndex(([k]) => k === 'vary');
  if (vary === -1) headers.push(['vary', 'Cookie']);
  else headers[vary] = ['vary', `${headers[vary]![1]}, Cookie`];
  return { ...res, headers };
}

function sign(key: string, payload: string): string {
  return createHmac('sha256', key).update(`cx-preview.${payload}`).digest('base64url');
}

function setCookie(key: string, claims: CookieClaims, secure: boolean, nowMs: number): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const maxAge = Math.max(0, claims.e - Math.floor(nowMs / 1000));
  return `${COOKIE}=${payload}.${sign(key, payload)}; Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

function cookieValues(h: string | undefined): string[] {
  if (!h) return [];
  const out: string[] = [];
  for (const part of h.split(';').slice(0, 50)) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === COOKIE)
      out.push(
        part
          .slice(eq + 1)
          .trim()
          .slice(0, 1024),
      );
  }
  return out;
}

/** Where to go after the password: a path on this host only (never `//other` or `/\other`), else `/`. */
function safeNext(v: string | null | undefined): string {
  if (!v || v.length > 2048 || !v.startsWith('/') || v.startsWith('//') || v.startsWith('/\\') || v.startsWith(AUTH_PATH) || v.startsWith(SHARE_PREFIX))
    return '/';
  return /[\u0000-\u001f\u007f]/.test(v) ? '/' : v;
}

function seeOther(location: string, cookie: string): SiteResponse {
  return {
    status: 303,
    headers: [
      ['location', location],
      ['set-cookie', cookie],
      ['cache-control', 'no-store'],
      ['content-type', 'text/plain; charset=utf-8'],
    ],
    body: Buffer.from(`Redirecting to ${location}`),
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The password page: no external asset, a strict CSP, never cached. */
function page(status: number, p: PreviewProtection, message: string | undefined, next: string, extra: Array<[string, string]> = []): SiteResponse {
  const noPassword = !p.passwordHash;
  const lead = noPassword ? 'This preview is protected. Ask the team for a share link to open it.' : 'This preview is protected. Type its password to open it.';
  const form = noPassword
    ? ''
    : `<form method="post" action="${AUTH_PATH}"><input type="hidden" name="next" value="${escapeHtml(next)}">` +
      '<label for="pw">Password</label><input id="pw" name="password" type="password" autocomplete="current-password" autofocus required>' +
      '<button type="submit">Open preview</button></form>';
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>Protected preview</title><style>
body{font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;margin:0;background:#f6f7f9;color:#1c1e21}
main{background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px #0002;max-width:22rem;width:100%}
h1{font-size:1.2rem;margin:0 0 .5rem}label{display:block;margin:1rem 0 .25rem}input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
button{margin-top:1rem;padding:.5rem 1rem;font:inherit;cursor:pointer}.msg{color:#b00020}
</style></head><body><main><h1>Protected preview</h1><p>${lead}</p>${message ? `<p class="msg" role="alert">${escapeHtml(message)}</p>` : ''}${form}</main></body></html>`;
  return {
    status,
    headers: [
      ['content-type', 'text/html; charset=utf-8'],
      ['cache-control', 'no-store'],
      ['content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"],
      ['x-content-type-options', 'nosniff'],
      ['referrer-policy', 'no-referrer'],
      ...extra,
    ],
    body: Buffer.from(html),
  };
}

function header(req: RequestHeaders, name: string): string | undefined {
  const v = req[name];
  return Array.isArray(v) ? v.join(', ') : v || undefined;
}
