import { afterEach, describe, expect, it } from 'vitest';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createPgliteStore } from '../platform/adapters/relational/pglite-store.ts';
import { bootstrapInstance } from './bootstrap.ts';
import { ALL_SCOPES } from '../schemas/scopes.ts';
import { bearer, buildTestApi, createKey, createProject, signUpAndSignIn } from '../test/support/accounts.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

/** A platform on PGlite files in `dir`: what `npm start` uses, so a restart sees the same data. */
async function onDisk(dir: string, env: Record<string, string> = {}) {
  const t = await buildTestApi({ env: { DATA_DIR: dir, ...env }, overrides: { db: await createPgliteStore(path.join(dir, 'pglite')) } });
  open.push(t);
  return t;
}

describe('first start', () => {
  it('creates the owner, a demo project and keys once, and never again', async () => {
    const t = await buildTestApi({ env: { OWNER_EMAIL: 'boss@example.test' } });
    open.push(t);
    const first = await bootstrapInstance(t.platform);
    expect(first).toMatchObject({ email: 'boss@example.test', projectSlug: 'demo' });
    expect(first!.password.length).toBeGreaterThanOrEqual(20);
    expect(first!.ingestKey).toMatch(/^cak_live_/);
    expect(first!.apiKey).toMatch(/^cx_live_/);
    expect(await bootstrapInstance(t.platform)).toBeNull();

    const signIn = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: first!.email, password: first!.password } });
    expect(signIn.statusCode).toBe(200);
    const rollup = await t.app.inject({ url: '/v1/projects/demo', headers: bearer(first!.apiKey) });
    expect(rollup.statusCode).toBe(200);
    expect(rollup.json().project.environmentHosts.production.length).toBeGreaterThan(0);
    const { rows } = await t.platform.db.query<{ scopes: string[] }>("SELECT scopes FROM api_keys WHERE kind = 'live'");
    expect(rows[0].scopes.sort()).toEqual([...ALL_SCOPES].sort());
  });

  it('is race-safe: concurrent first starts create exactly one owner', async () => {
    const t = await buildTestApi();
    open.push(t);
    const results = await Promise.all([bootstrapInstance(t.platform), bootstrapInstance(t.platform), bootstrapInstance(t.platform)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await t.platform.db.query('SELECT id FROM users')).rows).toHaveLength(1);
  });

  it('uses OWNER_PASSWORD when set', async () => {
    const t = await buildTestApi({ env: { OWNER_PASSWORD: 'a-long-owner-password' } });
    open.push(t);
    expect((await bootstrapInstance(t.platform))?.password).toBe('a-long-owner-password');
  });
});

describe('restart on the same DATA_DIR', () => {
  it('keeps users, sessions, projects and keys, and does not bootstrap again', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-restart-'));
    const a = await onDisk(dir);
    const first = await bootstrapInstance(a.platform);
    expect(first).not.toBeNull();
    const user = await signUpAndSignIn(a.app, a.platform);
    const project = await createProject(a.app, user.cookie, { environmentHosts: { production: ['keep.example.com'] } });
    const key = await createKey(a.app, user.cookie, project.slug, { kind: 'live', scopes: ['project:read'] });
    await a.close();
    open.splice(open.indexOf(a), 1);

    const b = await onDisk(dir);
    expect(await bootstrapInstance(b.platform)).toBeNull();
    const viaKey = await b.app.inject({ url: `/v1/projects/${project.slug}`, headers: bearer(key.token) });
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.json().project.environmentHosts.production).toEqual(['keep.example.com']);
    expect((await b.app.inject({ url: '/v1/auth/me', headers: { cookie: user.cookie } })).statusCode).toBe(200);
    const signIn = await b.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: first!.email, password: first!.password } });
    expect(signIn.statusCode).toBe(200);
  });
});
