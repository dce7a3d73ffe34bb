import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * The deploy family's public routes under random input: `POST /v1/hooks/:token` and
 * `GET /v1/deploy-logs/:slug/:deployId?token=`. Whatever arrives (tokens, bodies of any bytes and type,
 * signature headers, query strings, methods), the answer is a JSON error or success below 500, and the service
 * keeps answering. Seeded, so a failure reproduces.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let hookToken: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi({ processors: true });
  const user = await signUpAndSignIn(t.app, t.platform);
  slug = (await createProject(t.app, user.cookie)).slug;
  // A hook on a preview branch: calls queue previews (deduplicated while queued), never a 409.
  const hook = await t.app.inject({
    method: 'POST',
    url: `/v1/projects/${slug}/deploys/hooks`,
    headers: sessionHeaders(user.cookie),
    payload: { name: 'fuzz', branch: 'fuzz-branch' },
  });
  hookToken = hook.json().hook.token;
});
afterAll(async () => t?.close());

describe('deploy public routes under random input', () => {
  it('never answer 5xx, always JSON, and keep serving', async () => {
    const rnd = prng(14);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const token = pick([hookToken, `cxhook_${text(8)}`, encodeURIComponent(text(30)), 'cxhook_', '%00', '..%2F..', hookToken + 'x', 'a'.repeat(300)]);
      const body = pick([
        Buffer.alloc(0),
        bytes(Math.floor(rnd() * 3000)),
        Buffer.from('{"ref":"refs/heads/x"}'),
        Buffer.from(text(200)),
        Buffer.from('{"a":'),
      ]);
      const headers: Record<string, string> = {
        'content-type': pick([
          'application/json',
          'application/x-www-form-urlencoded',
          'text/plain',
          'application/octet-stream',
          'multipart/form-data; boundary=x',
          '',
        ]),
      };
      if (rnd() < 0.3)
        headers['x-hub-signature-256'] = pick([`sha256=${'a'.repeat(64)}`, 'sha256=', text(20).replace(/[^\x20-\x7e]/g, 'z'), `sha256=${'g'.repeat(64)}`]);
      if (rnd() < 0.2) headers['x-service-signature'] = pick(['0'.repeat(64), 'zz', '']);
      if (!headers['content-type']) delete headers['content-type'];
      const method = pick<'POST' | 'GET' | 'PUT' | 'DELETE'>(['POST', 'POST', 'POST', 'GET', 'PUT', 'DELETE']);
      const hook = await t.app.inject({ method, url: `/v1/hooks/${token}`, headers, payload: method === 'GET' || method === 'DELETE' ? undefined : body });
      const logs = await t.app.inject({
        url: `/v1/deploy-logs/${pick([slug, text(10), '%00'])}/${pick(['dep_x', encodeURIComponent(text(12))])}?${pick(['token=' + encodeURIComponent(text(20)), 'token=cxlog_x', 'from=-1', 'from=abc', '', 'token='])}`,
      });
      for (const res of [hook, logs]) {
        seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, `${method} /v1/hooks/${token} -> ${res.body}`).toBeLessThan(500);
        expect(() => JSON.parse(res.body), res.body).not.toThrow();
        if (res.statusCode >= 400) expect(typeof res.json().error).toBe('string');
      }
    }
    // The valid token was accepted at least once, so the random runs reached the queue.
    expect(seen.get(202)).toBeGreaterThan(0);
    expect((await t.app.inject({ url: '/v1/' })).statusCode).toBe(200);
  });
});
