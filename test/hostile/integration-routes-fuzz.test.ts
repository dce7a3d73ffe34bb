import { afterAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../support/accounts.ts';
import { startGithubStandin, type GithubStandin } from '../support/github-standin.ts';
import { prng } from '../support/prng.ts';
import { startStripeStandin, type StripeStandin } from '../support/stripe-standin.ts';

/**
 * Issue 38's new routes under random input, configured against their loopback stand-ins so the random calls reach
 * the code behind the checks: connecting a Stripe account (start, callback), connecting a GitHub repository (start,
 * callback), and the device login's lookup and approval. Whatever arrives (states, codes, ids, bodies of any bytes and
 * type, query strings, methods), the answer is below 500, JSON unless it is the callbacks' redirect, and the service
 * keeps answering. Seeded, so a failure reproduces.
 */
type Api = Awaited<ReturnType<typeof buildTestApi>>;
const apis: Api[] = [];
const standins: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(apis.map((a) => a.close()));
  await Promise.all(standins.map((s) => s.close()));
});

const rnd = prng(38);
const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
const query = () =>
  pick([
    '',
    `state=${encodeURIComponent(text(20))}`,
    `code=${encodeURIComponent(text(30))}&state=${encodeURIComponent(text(43))}`,
    'code=&state=',
    'error=access_denied&state=x',
    `state=${'a'.repeat(5000)}`,
    'code[]=1&state[a]=2',
    '%00=%00',
    `installation_id=${pick(['1', '-1', '9'.repeat(40), 'abc'])}&setup_action=install&state=x`,
  ]);
const body = () =>
  pick<Buffer | string | object>([
    Buffer.alloc(0),
    bytes(Math.floor(rnd() * 2000)),
    '{"a":',
    { repository: pick(['acme/site', text(20), '', '../..', 'a'.repeat(500)]) },
    { accountId: `acct_${text(10)}` },
    { user_code: pick(['ABCD-EFGH', text(9), '', '%00']) },
    { confirm: pick([true, 'yes', 1, null]) },
    [1, 2, 3],
  ]);

async function fuzz(app: FastifyInstance, cookie: string, routes: (i: number) => { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string }) {
  const seen = new Map<number, number>();
  for (let i = 0; i < 300; i++) {
    const { method, url } = routes(i);
    const payload = method === 'GET' || method === 'DELETE' ? undefined : body();
    const headers: Record<string, string> = rnd() < 0.8 ? sessionHeaders(cookie) : {};
    if (payload !== undefined && (Buffer.isBuffer(payload) || typeof payload === 'string'))
      headers['content-type'] = pick(['application/json', 'text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded']);
    const res = await app.inject({ method, url, headers, payload: payload as never });
    seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
    expect(res.statusCode, `${method} ${url} -> ${res.body.slice(0, 300)}`).toBeLessThan(500);
    if (res.statusCode >= 300 && res.statusCode < 400) continue;
    expect(() => JSON.parse(res.body), `${method} ${url} -> ${res.body.slice(0, 300)}`).not.toThrow();
    if (res.statusCode >= 400) expect(typeof res.json().error).toBe('string');
  }
  expect((await app.inject({ url: '/v1/' })).statusCode).toBe(200);
  return seen;
}

describe("issue 38's routes under random input", () => {
  it('Stripe Connect: start and callback never answer 5xx', async () => {
    const stand: StripeStandin = await startStripeStandin();
    standins.push(stand);
    const api = await buildTestApi({ env: stand.env, overrides: { outbound: createTestOutboundGuard({ ca: stand.cert }) } });
    apis.push(api);
    const owner = await signUpAndSignIn(api.app, api.platform);
    const p = await createProject(api.app, owner.cookie);
    const seen = await fuzz(api.app, owner.cookie, () =>
      pick([
        { method: pick(['GET', 'POST'] as const), url: `/v1/payments/connect/callback?${query()}` },
        { method: pick(['POST', 'POST', 'GET', 'PUT'] as const), url: `/v1/projects/${pick([p.slug, encodeURIComponent(text(8))])}/payments/connect` },
        { method: pick(['POST', 'GET'] as const), url: `/v1/projects/${p.slug}/payments` },
      ]),
    );
    // The random runs reached the real work: a connection was started at least once.
    expect(seen.get(201)).toBeGreaterThan(0);
  });

  it('GitHub App: start and callback, and the device login, never answer 5xx', async () => {
    const gh: GithubStandin = await startGithubStandin();
    standins.push(gh);
    const api = await buildTestApi({
      env: {
        ...gh.env,
        GITHUB_APP_SLUG: 'service-test',
      },
      overrides: { outbound: createTestOutboundGuard({ ca: gh.cert }) },
    });
    apis.push(api);
    const owner = await signUpAndSignIn(api.app, api.platform);
    const p = await createProject(api.app, owner.cookie);
    const seen = await fuzz(api.app, owner.cookie, () =>
      pick([
        { method: pick(['GET', 'POST'] as const), url: `/v1/integrations/github/callback?${query()}` },
        {
          method: pick(['POST', 'POST', 'GET'] as const),
          url: `/v1/integrations/github?${pick(['', `project=${p.slug}`, `project=${encodeURIComponent(text(6))}`])}`,
        },
        { method: pick(['DELETE', 'GET'] as const), url: `/v1/integrations/github/${encodeURIComponent(pick(['ghc_x', text(10), '1']))}` },
        { method: 'GET' as const, url: `/v1/cli/device?user_code=${encodeURIComponent(pick(['ABCD-EFGH', text(12), '', 'a'.repeat(3000)]))}` },
        { method: 'POST' as const, url: '/v1/cli/device/approve' },
        { method: 'POST' as const, url: '/v1/cli/device/token' },
      ]),
    );
    expect([...seen.keys()].some((s) => s < 300)).toBe(true);
  });
});
