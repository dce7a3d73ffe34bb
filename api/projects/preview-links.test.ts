import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';

/**
 * Issue 42 "Previews that only the team sees", the API's side: the project setting (on for new projects, the password
 * write-only), and share links (made, listed without tokens, revoked; bounds; another tenant's answers 404). What the
 * hosts answer is hosting/serve/preview-protection.test.ts.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let user: Awaited<ReturnType<typeof signUpAndSignIn>>;
let other: Awaited<ReturnType<typeof signUpAndSignIn>>;
beforeAll(async () => {
  t = await buildTestApi();
  user = await signUpAndSignIn(t.app, t.platform);
  other = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, cookie = user.cookie) =>
  t.app.inject({ method, url, headers: sessionHeaders(cookie), ...(payload && { payload }) });

describe('the previewProtection setting', () => {
  it('is on for a new project, without a password; a project from before 0044 keeps it off', async () => {
    const p = (await call('POST', '/v1/projects', { name: 'Protected by default' })).json().project;
    expect(p.previewProtection).toEqual({ enabled: true, passwordSet: false });
    await t.platform.db.query('UPDATE projects SET preview_protection = DEFAULT WHERE id = $1', [p.id]);
    expect((await call('GET', `/v1/projects/${p.slug}`)).json().project.previewProtection).toEqual({ enabled: false, passwordSet: false });
  });

  it('takes a password write-only (a scrypt hash, never shown), bumps its version, and clears it with null', async () => {
    const p = await createProject(t.app, user.cookie);
    const set = await call('PATCH', `/v1/projects/${p.slug}`, { previewProtection: { enabled: true, password: 'a long password' } });
    expect([set.statusCode, set.json().project.previewProtection]).toEqual([200, { enabled: true, passwordSet: true }]);
    expect(set.body).not.toContain('a long password');
    expect(set.body).not.toContain('scrypt');
    const row = await t.platform.db.query<{ preview_password_hash: string; preview_password_version: number }>(
      'SELECT preview_password_hash, preview_password_version FROM projects WHERE slug = $1',
      [p.slug],
    );
    expect(row.rows[0]!.preview_password_hash).toMatch(/^scrypt\$/);
    const cleared = await call('PATCH', `/v1/projects/${p.slug}`, { previewProtection: { password: null } });
    expect(cleared.json().project.previewProtection).toEqual({ enabled: true, passwordSet: false });
    const after = await t.platform.db.query<{ preview_password_version: number }>('SELECT preview_password_version FROM projects WHERE slug = $1', [p.slug]);
    expect(after.rows[0]!.preview_password_version).toBe(row.rows[0]!.preview_password_version + 1);
  });

  it('refuses a short or huge password and unknown fields (400)', async () => {
    const p = await createProject(t.app, user.cookie);
    for (const previewProtection of [{ password: 'short' }, { password: 'x'.repeat(201) }, { enabled: 'yes' }, { mode: 'team' }]) {
      const res = await call('PATCH', `/v1/projects/${p.slug}`, { previewProtection });
      expect([JSON.stringify(previewProtection), res.statusCode, res.json().error]).toEqual([JSON.stringify(previewProtection), 400, 'invalid_request']);
    }
  });
});

describe('preview share links', () => {
  it('makes a link (token shown once, 7 days by default), lists it without the token, revokes it', async () => {
    const p = await createProject(t.app, user.cookie);
    const made = await call('POST', `/v1/projects/${p.slug}/preview-links`, {});
    expect(made.statusCode).toBe(201);
    const link = made.json().link;
    expect(link.token).toMatch(/^cxp_/);
    expect(link.path).toBe(`/.cx/share/${link.token}`);
    expect(link.url).toBeNull();
    const days = (Date.parse(link.expiresAt) - Date.parse(link.createdAt)) / 86_400_000;
    expect(Math.round(days)).toBe(7);
    const list = await call('GET', `/v1/projects/${p.slug}/preview-links`);
    expect(list.json().links).toEqual([{ id: link.id, createdAt: link.createdAt, expiresAt: link.expiresAt, revokedAt: null }]);
    expect(list.body).not.toContain(link.token);
    expect((await call('DELETE', `/v1/projects/${p.slug}/preview-links/${link.id}`)).statusCode).toBe(204);
    expect((await call('GET', `/v1/projects/${p.slug}/preview-links`)).json().links[0].revokedAt).not.toBeNull();
  });

  it('bounds the days (1..30) and answers 404 for another tenant and for unknown ids', async () => {
    const p = await createProject(t.app, user.cookie);
    for (const days of [0, 31, 1.5, '7']) {
      const res = await call('POST', `/v1/projects/${p.slug}/preview-links`, { days });
      expect([days, res.statusCode]).toEqual([days, 400]);
    }
    const link = (await call('POST', `/v1/projects/${p.slug}/preview-links`, { days: 30 })).json().link;
    expect((await call('POST', `/v1/projects/${p.slug}/preview-links`, { deployId: 'dep_nope' })).statusCode).toBe(404);
    expect((await call('GET', `/v1/projects/${p.slug}/preview-links`, undefined, other.cookie)).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/projects/${p.slug}/preview-links/${link.id}`, undefined, other.cookie)).statusCode).toBe(404);
    const mine = await createProject(t.app, other.cookie);
    expect((await call('DELETE', `/v1/projects/${mine.slug}/preview-links/${link.id}`, undefined, other.cookie)).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/projects/${p.slug}/preview-links/pvl_unknown`)).statusCode).toBe(404);
  });

  it('keeps at most 50 links open at once (409 conflict)', async () => {
    const p = await createProject(t.app, user.cookie);
    for (let i = 0; i < 50; i++) expect((await call('POST', `/v1/projects/${p.slug}/preview-links`, {})).statusCode).toBe(201);
    const more = await call('POST', `/v1/projects/${p.slug}/preview-links`, {});
    expect([more.statusCode, more.json().error]).toEqual([409, 'conflict']);
  });
});
