import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';
import { publicStatusPage, statusTestGuard } from '../../test/support/status-page.ts';

/**
 * The public subscriber routes under random input (issue 43), over real HTTP: sign-up, confirm and unsubscribe with
 * slugs, tokens, bodies, content types and Accept headers of any kind. Never a 5xx; always JSON or (to a browser, a
 * form) a small HTML page; nothing a caller sent comes back unescaped; the service keeps answering. Seeded.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi({ overrides: { outbound: statusTestGuard().guard } });
  const owner = await signUpAndSignIn(t.app, t.platform);
  slug = (await publicStatusPage(t.app, owner.cookie)).slug;
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

describe('the public subscriber routes under random input', () => {
  it('never answer 5xx, always JSON or escaped HTML, and keep serving', async () => {
    const rnd = prng(43);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const s = pick([slug, slug.toUpperCase(), encodeURIComponent(text(Math.floor(rnd() * 30))), 'a'.repeat(Math.floor(rnd() * 400)), '%00', '..%2f..']);
      const token = pick(['', 'cxsub_x', encodeURIComponent(text(Math.floor(rnd() * 60))), 'a'.repeat(Math.floor(rnd() * 400)), '%3Cscript%3E']);
      const route = pick([
        { method: 'POST', path: `/v1/status/${s}/subscribers` },
        { method: 'GET', path: `/v1/status/${s}/subscribers/confirm?token=${token}` },
        { method: 'GET', path: `/v1/status/${s}/unsubscribe?token=${token}` },
        { method: 'POST', path: `/v1/status/${s}/unsubscribe?token=${token}` },
        { method: 'POST', path: `/v1/status/${s}/unsubscribe` },
        { method: 'GET', path: `/v1/status/${s}/subscribers/confirm` },
      ]);
      const type = pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', undefined]);
      const email = pick([`fuzz${i}@example.com`, text(Math.floor(rnd() * 40)), '<script>alert(1)</script>@x.com', 'a'.repeat(Math.floor(rnd() * 600)), '']);
      const body =
        route.method === 'GET'
          ? undefined
          : pick([
              type === 'application/json' ? JSON.stringify({ email }) : new URLSearchParams({ email }).toString(),
              JSON.stringify(pick([null, [], 42, { email: 7 }, { email, extra: text(10) }])),
              'List-Unsubscribe=One-Click',
              text(Math.floor(rnd() * 200)),
              '',
            ]);
      const headers: Record<string, string> = {};
      if (type && route.method === 'POST') headers['content-type'] = type;
      if (rnd() < 0.5) headers.accept = pick(['text/html', 'application/json', '*/*', 'text/html,application/xhtml+xml']);
      const res = await fetch(`${base}${route.path}`, { method: route.method, headers, body, signal: AbortSignal.timeout(5000) });
      const answer = await res.text();
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      expect(res.status, `${route.method} ${route.path.slice(0, 80)} ${type} ${answer.slice(0, 200)}`).toBeLessThan(500);
      const contentType = res.headers.get('content-type') ?? '';
      expect(contentType, answer.slice(0, 100)).toMatch(/application\/json|text\/html/);
      if (contentType.includes('text/html')) expect(answer).not.toContain('<script>');
    }
    expect(seen.get(404)).toBeGreaterThan(5);
    expect(seen.get(400)).toBeGreaterThan(5);
    expect((await fetch(`${base}/v1/status/${slug}`)).status).toBe(200);
  });
});
