import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';
import { routePath } from '../../schemas/api/client.ts';

/**
 * The alert-rule routes (issue 41) under random input from a signed-in tenant: random rule ids and bodies of any shape
 * on create and change. Whatever arrives, the answer is JSON below 500 with an error code when refused. Seeded, so a
 * failure reproduces.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let cookie: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi();
  cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  slug = (await createProject(t.app, cookie)).slug;
});
afterAll(async () => t?.close());

function check(res: { statusCode: number; body: string }, what: string) {
  expect(res.statusCode, `${what} -> ${res.body.slice(0, 300)}`).toBeLessThan(500);
  if (res.statusCode === 204) return;
  expect(() => JSON.parse(res.body), `${what} -> ${res.body.slice(0, 300)}`).not.toThrow();
  if (res.statusCode >= 400) expect(typeof JSON.parse(res.body).error).toBe('string');
}

describe('alert-rule routes under random input', () => {
  it('rule ids and bodies of any shape: never 5xx, always JSON', async () => {
    const rnd = prng(4139);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff) + 1)).join('');
    const nested = (depth: number): unknown => (depth === 0 ? 1 : { triggers: [nested(depth - 1)] });
    const num = () => pick<unknown>([0, -1, 1, 1.5, 1e12, Number.MAX_SAFE_INTEGER, '5', null, Number.NaN]);
    const trigger = () =>
      pick<unknown>([
        { type: 'new_issue' },
        { type: pick(['event_frequency', 'user_frequency']), count: num(), minutes: num() },
        { type: text(5) },
        'new_issue',
        [],
        nested(50),
      ]);
    const body = () =>
      pick<unknown>([
        {
          name: pick<unknown>(['n', text(150), '', 5, null]),
          triggers: Array.from({ length: Math.floor(rnd() * 8) }, trigger),
          environments: pick<unknown>([[], ['production'], [text(10)], 'production', Array.from({ length: 30 }, () => 'preview')]),
          levels: pick<unknown>([[], ['fatal'], ['x'], null]),
          actions: pick<unknown>([{ email: true }, { endpointIds: [text(20)] }, { endpointIds: Array.from({ length: 25 }, () => 'whk_x') }, {}, null]),
          throttleMinutes: num(),
        },
        [],
        null,
        text(100),
        nested(200),
        { name: 'ok', triggers: [{ type: 'regression' }], actions: { email: true }, default: true },
      ]);
    const ids = ['default', 'alr_nosuch', encodeURIComponent(text(10)), '%00', '..%2F..', 'r'.repeat(300)];
    for (let i = 0; i < 150; i++) {
      const payload = JSON.stringify(body());
      const headers = { ...sessionHeaders(cookie), 'content-type': pick(['application/json', 'text/plain']) };
      const list = routePath('listAlertRules', { slug });
      check(await t.app.inject({ method: 'POST', url: list, headers, payload }), `POST ${list} ${payload.slice(0, 80)}`);
      const url = routePath('getAlertRule', { slug, ruleId: 'x' }).replace(/\/x$/, `/${pick(ids)}`);
      const method = pick(['GET', 'PATCH', 'DELETE'] as const);
      check(await t.app.inject({ method, url, headers, ...(method === 'PATCH' ? { payload } : {}) }), `${method} ${url} ${payload.slice(0, 80)}`);
    }
    check(await t.app.inject({ method: 'GET', url: routePath('listAlertRules', { slug }), headers: sessionHeaders(cookie) }), 'GET list');
  });
});
