import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DISK_FULL_RETRY_AFTER_SEC } from '../../schemas/error-codes.ts';
import { gitRepoWith } from '../support/git-repo.ts';
import { mountTmpfs, TMPFS_SKIP_REASON, type Tmpfs } from '../support/tmpfs.ts';
import { eventually } from './support/http-client.ts';
import { spawnRole, type RoleProcess } from './support/spawn-role.ts';

/**
 * A full disk (issue 36), with every role in one process as `npm start` runs them and DATA_DIR on a small tmpfs that
 * a filler file fills: ingest answers 503 with Retry-After (nothing taken half), a deploy is not built, the API stays
 * readable, even with the disk full to the last byte; when the filler goes, everything is taken again with no restart,
 * and every event taken is counted once.
 */
const OWNER = { email: 'owner@disk.test', password: 'disk-owner-password' };
const THRESHOLD_MB = 24;
const MB = 1024 * 1024;

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(TMPFS_SKIP_REASON)(`a full disk under npm start${TMPFS_SKIP_REASON ? ` (skipped: ${TMPFS_SKIP_REASON})` : ''}`, () => {
  it('refuses ingest and builds, stays readable, and takes everything again once space returns', { timeout: 420_000 }, async () => {
    const disk: Tmpfs = mountTmpfs(128);
    cleanups.push(() => disk.unmount());
    const repo = gitRepoWith({ 'build.sh': 'mkdir -p out; echo "<h1>disk</h1>" > out/index.html' });

    const service: RoleProcess = await spawnRole(
      'all',
      {
        DATA_DIR: path.join(disk.dir, 'data'),
        DATA_DIR_MIN_FREE_MB: String(THRESHOLD_MB),
        // The build floor at the same threshold (its default, 1 GB, is more than this whole disk).
        BUILD_MIN_FREE_MB: String(THRESHOLD_MB),
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        OWNER_EMAIL: OWNER.email,
        OWNER_PASSWORD: OWNER.password,
        SETTINGS_REFRESH_MS: '250',
        ALLOW_LOCAL_REPOS: 'true',
      },
      { quietFirstStart: true },
      120_000,
    );
    cleanups.push(() => service.kill());
    const base = `http://127.0.0.1:${service.port}`;

    const call = async (route: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) => {
      const res = await fetch(`${base}${route}`, {
        method: init.method ?? 'GET',
        headers: { 'content-type': 'application/json', ...init.headers },
        body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json().catch(() => null)) as any };
    };
    const signIn = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
    expect(signIn.status).toBe(200);
    const session = {
      cookie: signIn.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; '),
      'sec-fetch-site': 'same-origin',
    };
    expect((await call('/v1/projects', { method: 'POST', headers: session, body: { name: 'disk', slug: 'disk' } })).status).toBe(201);
    const key = await call('/v1/projects/disk/keys', { method: 'POST', headers: session, body: { kind: 'ingest', name: 'k' } });
    expect(key.status).toBe(201);
    const settings = await call('/v1/projects/disk/deploys/settings', {
      method: 'PATCH',
      headers: session,
      body: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
    });
    expect(settings.status).toBe(200);

    const ingest = { authorization: `Bearer ${key.body.key.token}` };
    const postError = () =>
      call('/v1/errors/i', {
        method: 'POST',
        headers: ingest,
        body: { batch: [{ name: 'Error', message: 'disk test', stack: 'Error: disk test\n    at run (src/disk.ts:1:1)' }] },
      });
    /** A batch with no events: 400 while the disk has room, 503 while it is low (the disk is checked first): nothing is taken either way. */
    const probe = async () => (await call('/v1/errors/i', { method: 'POST', headers: ingest, body: { batch: [] } })).status;
    const issues = async () => (await call('/v1/projects/disk/errors', { headers: session })).body.data as Array<{ id: string; count: number }>;
    const counters = async () => (await call('/v1/errors/i/health')).body.counters as Record<string, number>;

    // Before: a batch taken and counted.
    await eventually('the edge knows the key', async () => ((await probe()) === 400 ? true : undefined), 60_000, 200);
    expect((await postError()).status).toBe(202);
    const issueId = await eventually('the issue counts one', async () => ((await issues())[0]?.count === 1 ? (await issues())[0]!.id : undefined), 60_000, 200);

    // The disk fills to under the threshold.
    disk.fill((THRESHOLD_MB / 2) * MB);
    await eventually('the watch sees the disk low', async () => ((await probe()) === 503 ? true : undefined), 30_000, 200);
    const refused = await postError();
    expect(refused).toMatchObject({ status: 503, retryAfter: String(DISK_FULL_RETRY_AFTER_SEC), body: { error: 'unavailable' } });
    expect(refused.body.message).toContain('out of disk space');
    const deploy = await call('/v1/projects/disk/deploys', { method: 'POST', headers: session, body: {} });
    expect(deploy).toMatchObject({ status: 503, body: { error: 'unavailable' } });
    expect((await call('/v1/projects/disk/deploys', { headers: session })).body.data).toEqual([]);
    expect(await issues()).toEqual([expect.objectContaining({ id: issueId, count: 1 })]);
    expect((await call(`/v1/projects/disk/errors/${issueId}`, { headers: session })).status).toBe(200);

    // Full to the last byte: still readable, still refusing.
    disk.fill(0);
    expect(disk.freeBytes()).toBe(0);
    expect((await postError()).status).toBe(503);
    expect(await issues()).toEqual([expect.objectContaining({ id: issueId, count: 1 })]);
    expect((await call('/v1/projects/disk', { headers: session })).status).toBe(200);

    // Space returns: taken again by itself.
    disk.unfill();
    await eventually('the watch sees room again', async () => ((await probe()) === 400 ? true : undefined), 30_000, 200);
    expect((await postError()).status).toBe(202);
    await eventually('the issue counts two', async () => ((await issues())[0]?.count === 2 ? true : undefined), 60_000, 200);
    const again = await call('/v1/projects/disk/deploys', { method: 'POST', headers: session, body: {} });
    expect(again.status).toBe(202);
    const built = await eventually(
      'the deploy ends',
      async () => {
        const d = (await call(`/v1/projects/disk/deploys/${again.body.deploy.id}`, { headers: session })).body.deploy;
        return ['ready', 'failed', 'canceled'].includes(d.status) ? d : undefined;
      },
      120_000,
      250,
    );
    expect(built).toMatchObject({ status: 'ready' });

    // Every event taken counted once: two accepted, two in the issue; the refusals took nothing.
    const counted = await counters();
    expect(counted.accepted_events).toBe(2);
    expect(counted.disk_full).toBeGreaterThanOrEqual(2);
    expect(await issues()).toEqual([expect.objectContaining({ id: issueId, count: 2 })]);
    await service.stop();
  });
});
