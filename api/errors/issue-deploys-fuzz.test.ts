import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';
import { routePath } from '../../schemas/api/client.ts';

/**
 * Issue 41's routes under random input from a signed-in tenant: a deploy's issues with random deploy ids, and the
 * resolve route with random bodies (resolve in next deploy's `inNextDeploy`). Whatever arrives, the answer is JSON
 * below 500 with an error code when refused. Seeded, so a failure reproduces.
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
  expect(() => JSON.parse(res.body), `${what} -> ${res.body.slice(0, 300)}`).not.toThrow();
  if (res.statusCode >= 400) expect(typeof JSON.parse(res.body).error).toBe('string');
}

describe("issue 41's routes under random input", () => {
  it('deploy ids and resolve bodies of any shape: never 5xx, always JSON', async () => {
    const rnd = prng(41);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff) + 1)).join('');
    const nested = (depth: number): unknown => (depth === 0 ? 1 : { inNextDeploy: nested(depth - 1) });
    for (let i = 0; i < 150; i++) {
      const deployId = pick(['dep_x', encodeURIComponent(text(12)), '%00', '..%2F..', 'd'.repeat(300), 'dep_' + 'a'.repeat(64)]);
      const url = routePath('listDeployIssues', { slug, deployId: 'x' }).replace('/deploys/x/', `/deploys/${deployId}/`);
      check(await t.app.inject({ method: 'GET', url, headers: sessionHeaders(cookie) }), `GET ${url}`);

      const groupId = pick(['grp_nosuch', encodeURIComponent(text(8)), 'g'.repeat(200)]);
      const resolve = routePath('resolveIssue', { slug, groupId: 'x' }).replace('/errors/x/', `/errors/${groupId}/`);
      const payload = pick<string>([
        '',
        '{}',
        '{"inNextDeploy":true}',
        '{"inNextDeploy":"yes"}',
        '{"inNextDeploy":true,"other":1}',
        '[true]',
        'null',
        '{"inNextDeploy":',
        JSON.stringify(nested(200)),
        text(200),
      ]);
      const res = await t.app.inject({
        method: 'POST',
        url: resolve,
        headers: { ...sessionHeaders(cookie), 'content-type': pick(['application/json', 'text/plain', 'application/x-www-form-urlencoded']) },
        payload,
      });
      check(res, `POST ${resolve} ${payload.slice(0, 60)}`);
    }
  });
});
