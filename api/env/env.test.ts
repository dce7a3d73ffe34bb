import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * Build variables per environment through HTTP (issue 42): targets and branch overrides, secrets write-only, the
 * bounds a tenant meets (reserved CX_ keys, sizes, counts, overlaps), another project's variable not found, and the
 * settings route's variables still working (one value for both environments).
 */
describe('build variables per environment', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;
  let stranger: SignedInUser;
  beforeAll(async () => {
    t = await buildTestApi();
    owner = await signUpAndSignIn(t.app, t.platform);
    stranger = await signUpAndSignIn(t.app, t.platform, { email: 'stranger@example.com' });
  });
  afterAll(async () => t?.close());

  const call = (u: SignedInUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: sessionHeaders(u.cookie), ...(payload ? { payload } : {}) });

  it('keeps a production, a preview and a branch value of one key apart; a secret is answered masked', async () => {
    const p = await createProject(t.app, owner.cookie);
    const prod = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'API_URL', value: 'https://api.example.com', target: ['production'] });
    expect(prod.statusCode).toBe(201);
    expect(prod.json().env).toMatchObject({ id: expect.stringMatching(/^env_/), key: 'API_URL', target: ['production'], branch: null, secret: false });
    const preview = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'API_URL', value: 'https://staging.example.com', target: ['preview'] });
    expect(preview.statusCode).toBe(201);
    const branch = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'API_URL', value: 'https://feature.example.com', branch: 'feature' });
    expect(branch.json().env).toMatchObject({ target: ['preview'], branch: 'feature' });
    const secret = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'TOKEN', value: 'hunter2-hunter2', secret: true });
    expect(secret.json().env).toMatchObject({ value: '••••', secret: true, target: ['production', 'preview'] });

    const list = await call(owner, 'GET', `/v1/projects/${p.slug}/env`);
    expect(list.statusCode).toBe(200);
    expect(list.json().env.map((e: { key: string; branch: string | null; target: string[] }) => [e.key, e.target.join('+'), e.branch])).toEqual([
      ['API_URL', 'production', null],
      ['API_URL', 'preview', null],
      ['API_URL', 'preview', 'feature'],
      ['TOKEN', 'production+preview', null],
    ]);
    expect(list.body).not.toContain('hunter2');

    // One key, one value per environment and branch.
    const clash = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'API_URL', value: 'x' });
    expect(clash.statusCode).toBe(409);
    expect(clash.json().error).toBe('conflict');

    // A secret stays secret unless its value is replaced with it.
    const reveal = await call(owner, 'PATCH', `/v1/projects/${p.slug}/env/${secret.json().env.id}`, { secret: false });
    expect(reveal.statusCode).toBe(400);
    const moved = await call(owner, 'PATCH', `/v1/projects/${p.slug}/env/${branch.json().env.id}`, { branch: 'other', value: 'https://other.example.com' });
    expect(moved.json().env).toMatchObject({ branch: 'other', value: 'https://other.example.com' });
    const del = await call(owner, 'DELETE', `/v1/projects/${p.slug}/env/${moved.json().env.id}`);
    expect(del.statusCode).toBe(204);
    expect((await call(owner, 'DELETE', `/v1/projects/${p.slug}/env/${moved.json().env.id}`)).statusCode).toBe(404);
  });

  it('refuses reserved CX_ keys, bad keys, oversized values and a production target with a branch, with 400', async () => {
    const p = await createProject(t.app, owner.cookie);
    const post = (body: object) => call(owner, 'POST', `/v1/projects/${p.slug}/env`, body);
    for (const body of [
      { key: 'CX_DEPLOY_ID', value: 'x' },
      { key: 'VITE_CX_DEPLOY_ID', value: 'x' },
      { key: 'lower', value: 'x' },
      { key: '1ABC', value: 'x' },
      { key: 'A'.repeat(LIMITS.buildEnv.keyChars + 1), value: 'x' },
      { key: 'BIG', value: 'x'.repeat(LIMITS.buildEnv.valueBytes + 1) },
      { key: 'BIG', value: 'é'.repeat(LIMITS.buildEnv.valueBytes / 2 + 1) },
      { key: 'BOTH', value: 'x', target: ['production'], branch: 'feature' },
      { key: 'NONE', value: 'x', target: [] },
      { key: 'EXTRA', value: 'x', whatever: 1 },
    ]) {
      const res = await post(body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    // The settings route's variables too.
    const settings = await call(owner, 'PATCH', `/v1/projects/${p.slug}/deploys/settings`, { env: { CX_BRANCH: { value: 'x' } } });
    expect(settings.statusCode).toBe(400);
  });

  it(`holds a project to ${LIMITS.buildEnv.perProject} variables and ${LIMITS.buildEnv.totalBytes} bytes`, async () => {
    const p = await createProject(t.app, owner.cookie);
    const big = 'v'.repeat(LIMITS.buildEnv.valueBytes - 10);
    for (let i = 0; i < 4; i++) expect((await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: `BIG_${i}`, value: big })).statusCode).toBe(201);
    const over = await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'SMALL', value: 'v'.repeat(100) });
    expect(over.statusCode).toBe(400);
    expect(over.json().message).toContain('together');

    const q = await createProject(t.app, owner.cookie);
    await t.platform.db.query(
      `INSERT INTO project_build_env (id, project_id, name, value) SELECT 'env_t' || g, $1, 'K_' || g, 'v' FROM generate_series(1, $2) g`,
      [q.id, LIMITS.buildEnv.perProject],
    );
    const past = await call(owner, 'POST', `/v1/projects/${q.slug}/env`, { key: 'ONE_MORE', value: 'v' });
    expect(past.statusCode).toBe(400);
    expect(past.json().message).toContain(String(LIMITS.buildEnv.perProject));
  });

  it("answers 404 for another project's variable, and keeps a stranger out of the project", async () => {
    const mine = await createProject(t.app, owner.cookie);
    const theirs = await createProject(t.app, stranger.cookie);
    const v = (await call(owner, 'POST', `/v1/projects/${mine.slug}/env`, { key: 'MINE', value: 'm' })).json().env;
    expect((await call(stranger, 'PATCH', `/v1/projects/${theirs.slug}/env/${v.id}`, { value: 'taken' })).statusCode).toBe(404);
    expect((await call(stranger, 'DELETE', `/v1/projects/${theirs.slug}/env/${v.id}`)).statusCode).toBe(404);
    expect((await call(stranger, 'GET', `/v1/projects/${mine.slug}/env`)).statusCode).toBe(404);
    expect((await call(owner, 'GET', `/v1/projects/${mine.slug}/env`)).json().env[0]).toMatchObject({ key: 'MINE', value: 'm' });
  });

  it('keeps the settings route working: its variables apply to both environments and replace every value of the key', async () => {
    const p = await createProject(t.app, owner.cookie);
    await call(owner, 'POST', `/v1/projects/${p.slug}/env`, { key: 'MODE', value: 'prod', target: ['production'] });
    const set = await call(owner, 'PATCH', `/v1/projects/${p.slug}/deploys/settings`, { env: { MODE: { value: 'all' }, OTHER: { value: 'o', secret: true } } });
    expect(set.statusCode).toBe(200);
    const env = (await call(owner, 'GET', `/v1/projects/${p.slug}/env`)).json().env;
    expect(env).toMatchObject([
      { key: 'MODE', value: 'all', target: ['production', 'preview'] },
      { key: 'OTHER', value: '••••', secret: true },
    ]);
    await call(owner, 'PATCH', `/v1/projects/${p.slug}/deploys/settings`, { env: { MODE: null } });
    expect((await call(owner, 'GET', `/v1/projects/${p.slug}/env`)).json().env.map((e: { key: string }) => e.key)).toEqual(['OTHER']);
  });
});
