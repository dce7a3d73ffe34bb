import { ingestTokenOfSentryKey } from '../../platform/sentry-dsn.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { bearer, buildTestApi, createCliToken, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';

const clock = new ManualClock();
let t: Awaited<ReturnType<typeof buildTestApi>>;
let user: Awaited<ReturnType<typeof signUpAndSignIn>>;
beforeAll(async () => {
  t = await buildTestApi({ overrides: { clock } });
  user = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const post = (slug: string, payload: object) =>
  t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/keys`, headers: sessionHeaders(user.cookie), payload });
const list = (slug: string) => t.app.inject({ url: `/v1/projects/${slug}/keys`, headers: { cookie: user.cookie } });

describe('project keys', () => {
  it('creates live, test and ingest keys with their prefixes; the token is shown once', async () => {
    const p = await createProject(t.app, user.cookie);
    const live = await post(p.slug, { kind: 'live', name: 'ci', scopes: ['errors:read', 'errors:read', 'project:read'] });
    expect(live.statusCode).toBe(201);
    const key = live.json().key;
    expect(key.token).toMatch(/^cx_live_[A-Za-z0-9_-]{43}$/);
    expect(key).toMatchObject({ kind: 'live', name: 'ci', scopes: ['errors:read', 'project:read'], revoked: false, lastUsedAt: null });
    expect(key.hint).toBe(`cx_live_${key.token.slice(8, 12)}…`);
    expect((await post(p.slug, { kind: 'test', scopes: ['keys:read'] })).json().key.token).toMatch(/^cx_test_/);
    expect((await post(p.slug, { kind: 'ingest' })).json().key).toMatchObject({ kind: 'ingest', scopes: [] });
    const ingest = (await post(p.slug, { kind: 'ingest' })).json().key;
    expect(ingest.token).toMatch(/^cak_live_/);
    // The Sentry DSN of the key: the same secret in hex, and the project's number, as Sentry SDKs require.
    const dsn = new URL(ingest.dsn);
    expect(dsn.pathname).toMatch(/^\/\d+$/);
    expect(ingestTokenOfSentryKey(dsn.username)).toBe(ingest.token);
    expect(key.dsn).toBeUndefined();

    const listed = list(p.slug);
    const body = (await listed).json();
    expect(body.keys).toHaveLength(4);
    expect(JSON.stringify(body)).not.toContain(ingest.dsn);
    expect(JSON.stringify(body)).not.toContain(key.token);
    for (const k of body.keys) expect(k.token).toBeUndefined();
  });

  it('stores only the SHA-256 of each token', async () => {
    const p = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const { rows } = await t.platform.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [k.id]);
    expect(rows[0].token_hash).toBe(tokenHash(k.token));
    expect(JSON.stringify(rows[0])).not.toContain(k.token.slice(8));
  });

  it('refuses unknown scopes, scopes on ingest keys and scope-less API keys', async () => {
    const p = await createProject(t.app, user.cookie);
    for (const payload of [
      { kind: 'live', scopes: ['everything'] },
      { kind: 'ingest', scopes: ['errors:read'] },
      { kind: 'live', scopes: [] },
      { kind: 'root' },
    ]) {
      const res = await post(p.slug, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
  });

  it('records last use at most once a minute, and a revoked key is refused at once', async () => {
    const p = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(k.token) })).statusCode).toBe(200);
    const first = (await list(p.slug)).json().keys.find((x: { id: string }) => x.id === k.id).lastUsedAt;
    expect(first).toBe(new Date(clock.now()).toISOString());
    clock.advance(30_000);
    await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(k.token) });
    expect((await list(p.slug)).json().keys.find((x: { id: string }) => x.id === k.id).lastUsedAt).toBe(first);
    clock.advance(31_000);
    await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(k.token) });
    expect((await list(p.slug)).json().keys.find((x: { id: string }) => x.id === k.id).lastUsedAt).toBe(new Date(clock.now()).toISOString());

    const del = await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/keys/${k.id}`, headers: sessionHeaders(user.cookie) });
    expect(del.statusCode).toBe(200);
    expect(del.json().key).toMatchObject({ id: k.id, revoked: true });
    const after = await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(k.token) });
    expect(after.statusCode).toBe(401);
    expect(after.json().error).toBe('unauthorized');
    expect((await list(p.slug)).json().keys.find((x: { id: string }) => x.id === k.id)).toMatchObject({ revoked: true });
  });

  it('a key reaches only its own project: another project answers 404 as if absent', async () => {
    const a = await createProject(t.app, user.cookie);
    const b = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, a.slug, { kind: 'live', scopes: ['project:read', 'keys:read'] });
    const res = await t.app.inject({ url: `/v1/projects/${b.slug}`, headers: bearer(k.token) });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('not_found');
  });

  it('keys cannot manage keys (a member: session or CLI token), and a key without the scope is refused', async () => {
    const p = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const create = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/keys`,
      headers: bearer(k.token),
      payload: { kind: 'live', scopes: ['keys:read'] },
    });
    expect([create.statusCode, create.json().error]).toEqual([403, 'forbidden']);
    const cli = await createCliToken(t.app, user.cookie);
    const byCli = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/keys`, headers: bearer(cli.token), payload: { kind: 'ingest' } });
    expect(byCli.statusCode).toBe(201);
    const read = await t.app.inject({ url: `/v1/projects/${p.slug}/keys`, headers: bearer(k.token) });
    expect([read.statusCode, read.json().error]).toEqual([403, 'insufficient_scope']);
  });

  it("revoking an unknown key or another project's key is 404", async () => {
    const a = await createProject(t.app, user.cookie);
    const b = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, a.slug, { kind: 'ingest' });
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/projects/${b.slug}/keys/${k.id}`, headers: sessionHeaders(user.cookie) });
    expect(res.statusCode).toBe(404);
  });
});
