import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, signUpAndSignIn } from '../../test/support/accounts.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * `GET /v1/status/:slug` under random input (issue 26): slugs of any characters and length, methods, conditional and
 * odd headers, over real HTTP. Never a 5xx, always JSON (or an empty 304), a hit and a miss alike fast, and the cache
 * of unknown slugs stays bounded: the service keeps answering. Seeded.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi({ overrides: { outbound: statusTestGuard().guard } });
  const owner = await signUpAndSignIn(t.app, t.platform);
  ({ slug } = await publicStatusPage(t.app, owner.cookie, 'Public'));
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

describe('the status route under random input', () => {
  it('never answers 5xx, always JSON or an empty 304, and keeps serving', async () => {
    const rnd = prng(26);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    let etag = '';
    for (let i = 0; i < 400; i++) {
      const s = pick([
        slug,
        slug.toUpperCase(),
        encodeURIComponent(text(Math.floor(rnd() * 40))),
        'a'.repeat(Math.floor(rnd() * 3000)),
        '%00',
        '..%2f..',
        `${slug}%20`,
      ]);
      const headers: Record<string, string> = {};
      if (rnd() < 0.3) headers['if-none-match'] = pick([etag, '*', 'W/"x"', text(20).replace(/[^\x20-\x7e]/g, 'z')]);
      if (rnd() < 0.2) headers.origin = pick(['https://status.example.com', 'null']);
      if (rnd() < 0.1) headers['x-forwarded-for'] = pick(['1.2.3.4', 'nonsense', '::1']);
      const method = pick(['GET', 'GET', 'GET', 'HEAD', 'POST', 'OPTIONS']);
      const res = await fetch(`${base}/v1/status/${s}`, { method, headers, signal: AbortSignal.timeout(5000) });
      const body = await res.text();
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      expect(res.status, `${method} ${s.slice(0, 60)} ${body.slice(0, 200)}`).toBeLessThan(500);
      if (res.status === 200 && method === 'GET') etag = res.headers.get('etag') ?? etag;
      if (res.status !== 304 && method !== 'HEAD') expect(res.headers.get('content-type')).toMatch(/application\/json/);
    }
    expect(seen.get(200)).toBeGreaterThan(10);
    expect(seen.get(404)).toBeGreaterThan(10);
    expect((await fetch(`${base}/v1/status/${slug}`)).status).toBe(200);
    // a cache-buster from a widget on another site is passed through, not refused (issue 39: strict query strings)
    expect((await fetch(`${base}/v1/status/${slug}?_=1700000000`)).status).toBe(200);
  });

  it('limits each caller IP to 600 requests a minute, with Retry-After', async () => {
    const from = (ip: string) => t.app.inject({ url: `/v1/status/${slug}`, remoteAddress: ip });
    for (let i = 0; i < 600; i++) expect((await from('198.51.100.7')).statusCode).toBe(200);
    const over = await from('198.51.100.7');
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toBe('rate_limited');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    expect((await from('198.51.100.8')).statusCode).toBe(200);
  });
});
