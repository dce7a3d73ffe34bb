import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysRepository } from '../keys/keys-repository.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * PostHog's local-evaluation routes (`GET /flags/definitions`, `/api/feature_flag/local_evaluation`) under random
 * input: tokens, credentials, ETags, methods and query strings of any kind. The answer is JSON (or an empty 304)
 * below 500, and the service keeps answering. Seeded, so a failure reproduces.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let apiKey: string;
let ingestKey: string;

beforeAll(async () => {
  t = await buildTestApi();
  const user = await signUpAndSignIn(t.app, t.platform);
  const { slug } = await createProject(t.app, user.cookie);
  const { rows } = await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug]);
  const projectId = rows[0]!.id;
  apiKey = (await keysRepository.createKey(t.platform.db, { projectId, kind: 'live', scopes: ['flags:read'], now: Date.now() })).token;
  ingestKey = (await keysRepository.createKey(t.platform.db, { projectId, kind: 'ingest', now: Date.now() })).token;
});
afterAll(async () => t?.close());

describe('the local-evaluation routes under random input', () => {
  it('never answer 5xx, answer JSON, and keep serving', async () => {
    const rnd = prng(28);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(1 + Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const path = pick(['/flags/definitions', '/api/feature_flag/local_evaluation']);
      const token = pick([ingestKey, '', encodeURIComponent(text(20)), 'cak_live_x', 'a'.repeat(300), '%zz', `${ingestKey}&token=x`]);
      const query = pick([`?token=${token}&send_cohorts`, `?token=${token}`, '', `?${encodeURIComponent(text(15))}`, '?send_cohorts=1&token[]=x']);
      const headers: Record<string, string> = {};
      const auth = pick([`Bearer ${apiKey}`, `Bearer ${ingestKey}`, 'Bearer ', `Bearer cx_live_${text(5)}`, '', `Basic ${text(4)}`]);
      if (auth) headers.authorization = auth;
      if (rnd() < 0.3) headers['if-none-match'] = pick(['"x"', '*', text(10), 'W/"y"']);
      const method = pick(['GET', 'GET', 'GET', 'POST', 'HEAD', 'DELETE']);
      const res = await t.app.inject({ method: method as 'GET', url: `${path}${query}`, headers });
      seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
      expect(res.statusCode, `${method} ${path}${query} -> ${res.body}`).toBeLessThan(500);
      if (res.body && method !== 'HEAD') expect(() => JSON.parse(res.body), res.body).not.toThrow();
    }
    expect(seen.get(200) ?? 0).toBeGreaterThan(0);
    expect((await t.app.inject({ url: '/v1/' })).statusCode).toBe(200);
  });
});
