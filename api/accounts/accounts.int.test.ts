import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWith } from '../../test/support/backends.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { bearer, buildTestApi, createCliToken, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';

/** The accounts and credentials flow against the real Postgres server (same SQL as PGlite). */
describeWith(['postgres'], 'accounts and credentials on Postgres', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  beforeAll(async () => {
    t = await buildTestApi({ real: { postgres: true } });
  });
  afterAll(async () => t?.close());

  it('sign-in, project, keys, CLI login, revocation and cross-site refusal', async () => {
    expect(t.platform.db.adapter).toBe('postgres');
    const user = await signUpAndSignIn(t.app, t.platform);
    const p = await createProject(t.app, user.cookie, { environmentHosts: { production: ['pg.example.com'], preview: [] } });
    const key = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const rollup = await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(key.token) });
    expect(rollup.statusCode).toBe(200);
    expect(rollup.json().project.keys.live).toBe(1);
    const stored = await t.platform.db.query<{ token_hash: string }>('SELECT token_hash FROM api_keys WHERE id = $1', [key.id]);
    expect(stored.rows[0].token_hash).toBe(tokenHash(key.token));

    const cli = await createCliToken(t.app, user.cookie);
    expect((await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(cli.token) })).json().user.email).toBe(user.email);
    expect((await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(key.token) })).statusCode).toBe(403);

    await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/keys/${key.id}`, headers: sessionHeaders(user.cookie) });
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(key.token) })).statusCode).toBe(401);

    const cross = await t.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: { cookie: user.cookie, 'sec-fetch-site': 'cross-site' },
      payload: { name: 'x' },
    });
    expect(cross.json().error).toBe('cross_site_request');

    const out = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-out', headers: sessionHeaders(user.cookie) });
    expect(out.statusCode).toBe(204);
    expect((await t.app.inject({ url: '/v1/auth/me', headers: { cookie: user.cookie } })).statusCode).toBe(401);
  });
});
