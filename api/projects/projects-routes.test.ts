import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';

let t: Awaited<ReturnType<typeof buildTestApi>>;
let user: Awaited<ReturnType<typeof signUpAndSignIn>>;
beforeAll(async () => {
  t = await buildTestApi();
  user = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const create = (payload: object, cookie = user.cookie) => t.app.inject({ method: 'POST', url: '/v1/projects', headers: sessionHeaders(cookie), payload });

describe('projects', () => {
  it('creates a project with environment hosts, an owner membership and default error settings', async () => {
    const slug = `shop-${Date.now().toString(36)}`;
    const res = await create({
      name: 'Shop',
      slug,
      defaultBranch: 'release',
      environmentHosts: { production: ['Shop.Example.com', 'shop.example.com', 'localhost:8080'], preview: ['*.preview.example.com'] },
    });
    expect(res.statusCode).toBe(201);
    const p = res.json().project;
    expect(p).toMatchObject({
      slug,
      name: 'Shop',
      defaultBranch: 'release',
      environmentHosts: { production: ['shop.example.com', 'localhost:8080'], preview: ['*.preview.example.com'] },
    });
    expect(p).not.toHaveProperty('domains');
    expect(p.id).toMatch(/^prj_/);
    const settings = await t.platform.db.query('SELECT paused FROM error_settings WHERE project_id = $1', [p.id]);
    expect(settings.rows).toEqual([{ paused: false }]);
    const list = await t.app.inject({ url: '/v1/projects', headers: { cookie: user.cookie } });
    expect(list.json().projects.map((x: { slug: string }) => x.slug)).toContain(slug);
  });

  it('derives a slug from the name and makes it unique', async () => {
    const a = (await create({ name: 'My Cool App!' })).json().project;
    const b = (await create({ name: 'My Cool App!' })).json().project;
    expect(a.slug).toMatch(/^my-cool-app/);
    expect(b.slug).toMatch(/^my-cool-app-[0-9a-f]{6}$/);
  });

  it('refuses a taken slug (409 slug_taken) and invalid slugs or host patterns (400)', async () => {
    const p = await createProject(t.app, user.cookie);
    const taken = await create({ name: 'again', slug: p.slug });
    expect([taken.statusCode, taken.json().error]).toEqual([409, 'slug_taken']);
    for (const payload of [
      { name: 'x', slug: 'ab' },
      { name: 'x', slug: 'Has-Caps' },
      { name: 'x', slug: '-lead' },
      { name: 'x', slug: 'a'.repeat(41) },
      { name: 'x', environmentHosts: { production: ['not a host'], preview: [] } },
      { name: 'x', environmentHosts: { production: ['localhost:70000'], preview: [] } },
    ]) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
  });

  it("lists only the user's own projects", async () => {
    const other = await signUpAndSignIn(t.app, t.platform);
    await createProject(t.app, user.cookie);
    const mine = await createProject(t.app, other.cookie);
    const res = await t.app.inject({ url: '/v1/projects', headers: { cookie: other.cookie } });
    expect(res.json().projects.map((x: { slug: string }) => x.slug)).toEqual([mine.slug]);
  });

  it('the dashboard rollup counts active keys and open issues per environment', async () => {
    const p = await createProject(t.app, user.cookie);
    await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const revoked = await createKey(t.app, user.cookie, p.slug, { kind: 'test', scopes: ['project:read'] });
    await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/keys/${revoked.id}`, headers: sessionHeaders(user.cookie) });
    await createKey(t.app, user.cookie, p.slug, { kind: 'ingest' });
    const group = (status: string, envCounts: Record<string, number>) =>
      t.platform.db.query(
        `INSERT INTO error_groups (id, project_id, fingerprint, name, message, status, count, env_counts, first_seen, last_seen) VALUES ($1, $2, $3, 'Error', 'm', $4, 1, $5, now(), now())`,
        [newId('grp_'), p.id, newId('fp_'), status, JSON.stringify(envCounts)],
      );
    await group('unresolved', { production: 3 });
    await group('unresolved', { production: 1, preview: 2 });
    await group('unresolved', { unknown: 1 });
    await group('resolved', { production: 9 });
    await group('ignored', { preview: 9 });
    const res = await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: { cookie: user.cookie } });
    expect(res.statusCode).toBe(200);
    expect(res.json().project).toMatchObject({
      slug: p.slug,
      keys: { live: 1, test: 0, ingest: 1 },
      errors: { open: 3, openByEnvironment: { production: 2, preview: 1, unknown: 1 } },
    });
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: bearer(k.token) })).json().project.keys.live).toBe(2);
  });

  it('PATCH changes name, default branch and environment hosts; keys cannot', async () => {
    const p = await createProject(t.app, user.cookie, { environmentHosts: { production: ['a.example.com'], preview: ['b.example.com'] } });
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/v1/projects/${p.slug}`,
      headers: sessionHeaders(user.cookie),
      payload: { name: 'Renamed', defaultBranch: 'trunk', environmentHosts: { production: ['c.example.com'] } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().project).toMatchObject({
      name: 'Renamed',
      defaultBranch: 'trunk',
      environmentHosts: { production: ['c.example.com'], preview: ['b.example.com'] },
    });
    const bad = await t.app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers: sessionHeaders(user.cookie), payload: { slug: 'new-slug' } });
    expect(bad.statusCode).toBe(400);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const byKey = await t.app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers: bearer(k.token), payload: { name: 'x' } });
    expect(byKey.statusCode).toBe(403);
  });

  // Issue 39 §5: `domains` named both these host patterns and the custom domains a site answers on; a caller still
  // sending the old name is told the new one (and where domains are claimed), on create and on change, not ignored.
  it('the old field name `domains` is refused, naming environmentHosts and the custom domains route; nothing changes', async () => {
    const p = await createProject(t.app, user.cookie, { environmentHosts: { production: ['kept.example.com'] } });
    const old = { domains: { production: ['shop.example.com'], preview: [] } };
    const patched = await t.app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers: sessionHeaders(user.cookie), payload: old });
    const created = await create({ name: 'Old client', ...old });
    for (const res of [patched, created]) {
      expect([res.statusCode, res.json().error]).toEqual([400, 'invalid_request']);
      expect(res.json().message).toContain('environmentHosts');
      expect(res.json().message).toContain('POST /v1/projects/:slug/domains');
      expect(res.json().fields).toEqual([expect.objectContaining({ path: 'body.domains' })]);
    }
    const now = (await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: { cookie: user.cookie } })).json().project;
    expect(now.environmentHosts).toEqual({ production: ['kept.example.com'], preview: [] });
    const mine = (await t.app.inject({ url: '/v1/projects', headers: { cookie: user.cookie } })).json().projects;
    expect(mine.map((x: { name: string }) => x.name)).not.toContain('Old client');
  });

  it('OpenAPI says what environmentHosts do and where custom domains are', async () => {
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    const body = doc.paths['/v1/projects/{slug}'].patch.requestBody.content['application/json'].schema;
    expect(body.properties.environmentHosts.description).toMatch(/stamp an event's environment from its page's Origin/);
    expect(body.properties.environmentHosts.description).toContain('/v1/projects/:slug/domains');
    expect(body.properties.domains.description).toMatch(/^refused: renamed: send environmentHosts/);
    const answer = doc.paths['/v1/projects/{slug}'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(answer)).not.toContain('"domains"');
  });

  it('serveSourceMaps: off by default, turned on and off by PATCH alone, a boolean only; a key cannot', async () => {
    const p = await createProject(t.app, user.cookie);
    const patch = (payload: object, headers = sessionHeaders(user.cookie)) =>
      t.app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers, payload });
    const shown = async () => (await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: { cookie: user.cookie } })).json().project.serveSourceMaps;
    expect(await shown()).toBe(false);
    expect((await patch({ serveSourceMaps: true })).json().project).toMatchObject({ serveSourceMaps: true, name: p.name });
    expect(await shown()).toBe(true);
    // Another setting changed leaves it as it is.
    expect((await patch({ name: 'Still serving' })).json().project.serveSourceMaps).toBe(true);
    const bad = await patch({ serveSourceMaps: 'yes' });
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_request']);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    expect((await patch({ serveSourceMaps: false }, bearer(k.token))).statusCode).toBe(403);
    expect((await patch({ serveSourceMaps: false })).json().project.serveSourceMaps).toBe(false);
    expect(await shown()).toBe(false);
  });
});
