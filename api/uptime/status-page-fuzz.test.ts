import { XMLValidator } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, signUpAndSignIn } from '../../test/support/accounts.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * The status page's routes under random input (issue 43): `GET /status/:slug`, `/v1/status/:slug/badge.svg` (random
 * `monitor` and `window`) and `/v1/status/:slug/feed.atom`, with slugs of any characters and length, methods,
 * conditional and odd headers, and Hosts, over real HTTP. Never a 5xx; a 200 is HTML, SVG or Atom that parses
 * (well-formed XML for the badge and the feed); an error is JSON; the renders kept stay bounded. Seeded.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let slug: string;
let monitorId: string;

beforeAll(async () => {
  t = await buildTestApi({ overrides: { outbound: statusTestGuard().guard } });
  const owner = await signUpAndSignIn(t.app, t.platform);
  ({ slug, monitorId } = await publicStatusPage(t.app, owner.cookie, '<b>&"\'</b>'));
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

describe('the status page routes under random input', () => {
  it('never answer 5xx; a 200 is HTML, SVG or Atom that parses, an error JSON; and keep serving', async () => {
    const rnd = prng(43);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    const etags = new Set<string>(['*']);
    for (let i = 0; i < 450; i++) {
      const s = pick([
        slug,
        slug.toUpperCase(),
        encodeURIComponent(text(Math.floor(rnd() * 40))),
        'a'.repeat(Math.floor(rnd() * 3000)),
        '%00',
        '..%2f..',
        `${slug}%20`,
      ]);
      const query = pick([
        '',
        `?monitor=${monitorId}`,
        `?monitor=${monitorId}&window=${pick(['24h', '7d', '90d', '1y', '', '%00'])}`,
        `?monitor=${encodeURIComponent(text(Math.floor(rnd() * 80)))}`,
        `?window=${encodeURIComponent(text(5))}`,
        `?${encodeURIComponent(text(10))}=${encodeURIComponent(text(10))}`,
        '?_=1700000000',
      ]);
      const route = pick(['page', 'badge', 'feed'] as const);
      const path = route === 'page' ? `/status/${s}${query}` : `/v1/status/${s}/${route === 'badge' ? 'badge.svg' : 'feed.atom'}${query}`;
      const headers: Record<string, string> = {};
      if (rnd() < 0.3) headers['if-none-match'] = pick([...etags, 'W/"x"', text(20).replace(/[^\x20-\x7e]/g, 'z')]);
      if (rnd() < 0.1) headers.accept = pick(['text/html', 'image/svg+xml', '*/*', text(10).replace(/[^\x20-\x7e]/g, 'z')]);
      const method = pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'OPTIONS', 'DELETE']);
      const res = await fetch(`${base}${path}`, { method, headers, signal: AbortSignal.timeout(5000) });
      const body = await res.text();
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      expect(res.status, `${method} ${path.slice(0, 80)} ${body.slice(0, 200)}`).toBeLessThan(500);
      if (res.status === 200 && method === 'GET') {
        etags.add(res.headers.get('etag')!);
        const type = res.headers.get('content-type') ?? '';
        if (route === 'page') {
          expect(type).toBe('text/html; charset=utf-8');
          expect(body).not.toMatch(/<script|<b>/i);
        } else {
          expect(type).toMatch(route === 'badge' ? /^image\/svg\+xml/ : /^application\/atom\+xml/);
          expect(XMLValidator.validate(body), body.slice(0, 200)).toBe(true);
        }
      } else if (res.status === 404 && route === 'page' && method === 'GET' && /text\/html/i.test(headers.accept ?? '')) {
        // A browser's 404: the page saying so, escaped as the status page is.
        expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(body).toContain('No status page here');
        expect(body).not.toMatch(/<script|<b>/i);
      } else if (res.status >= 400 && method !== 'HEAD') expect(res.headers.get('content-type')).toMatch(/application\/json/);
    }
    expect(seen.get(200)).toBeGreaterThan(10);
    expect(seen.get(404)).toBeGreaterThan(10);
    expect(seen.get(304)).toBeGreaterThan(0);
    for (const path of [`/status/${slug}`, `/v1/status/${slug}/badge.svg`, `/v1/status/${slug}/feed.atom`])
      expect((await fetch(`${base}${path}`)).status).toBe(200);
  });
});
