import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createInProcessBus } from '../platform/adapters/bus/in-process-bus.ts';
import { createPgliteWorkerStore } from '../platform/adapters/relational/pglite-worker-store.ts';
import { startDiskSpaceWatch, type StatFs } from '../platform/data-dir/disk-space.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../test/support/accounts.ts';
import { gitRepoWith } from '../test/support/git-repo.ts';
import { mountTmpfs, TMPFS_SKIP_REASON } from '../test/support/tmpfs.ts';
import { DISK_FULL_BUILD_LINE } from './build-deploy.ts';
import { startBuilder } from './deploy-builder.ts';

/**
 * Builds on a full disk (issue 36). Chosen: a deploy the builder takes while DATA_DIR's disk is low fails at once as
 * disk_full, with a line in its build log saying so, rather than waiting in the queue; it can be redeployed once there
 * is room (as Vercel shows a failed deployment with its reason and a Redeploy button). A build whose artifact runs out
 * of space fails the same way and leaves nothing of the artifact behind.
 */
const MB = 1024 * 1024;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Api = Awaited<ReturnType<typeof buildTestApi>>;

async function projectBuilding(t: Api, script: string) {
  const owner = await signUpAndSignIn(t.app, t.platform);
  const S = sessionHeaders(owner.cookie);
  const p = await createProject(t.app, owner.cookie);
  const settings = await t.app.inject({
    method: 'PATCH',
    url: `/v1/projects/${p.slug}/deploys/settings`,
    headers: S,
    payload: { repoUrl: gitRepoWith({ 'build.sh': script }), buildCommand: 'sh build.sh', outputDir: 'out' },
  });
  expect(settings.statusCode).toBe(200);
  const deploy = () => t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: S, payload: { branch: 'main' } });
  const get = async (id: string) => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: S })).json().deploy;
  const finished = async (id: string) => {
    await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await get(id)).status), { timeout: 60_000, interval: 100 });
    return get(id);
  };
  const log = async (id: string) => JSON.stringify((await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/logs`, headers: S })).json());
  return { deploy, finished, log };
}

describe('a build while the disk is low', () => {
  it('does not run: the deploy fails as disk_full with a log line; once there is room a redeploy builds', { timeout: 120_000 }, async () => {
    // Room: above DATA_DIR_MIN_FREE_MB (256) and the build floor (BUILD_MIN_FREE_MB, 1024).
    let freeMb = 2000;
    const statfs: StatFs = async () => ({ bavail: (freeMb * MB) / 4096, bsize: 4096 });
    const disk = await startDiskSpaceWatch({ dir: '/data', minFreeBytes: 256 * MB, statfs, intervalMs: 0 });
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'disk-full-data-'));
    // The bus keeps its log in DATA_DIR: the deploy is queued (its request written) while no builder runs yet.
    const t = await buildTestApi({ env: { ALLOW_LOCAL_REPOS: 'true', BUILD_SANDBOX: 'off', DATA_DIR: dataDir }, overrides: { disk } });
    cleanups.push(() => t.close());
    const p = await projectBuilding(t, 'mkdir -p out && echo built > out/index.html && echo BUILD-RAN');
    const queued = await p.deploy();
    expect(queued.statusCode).toBe(202);
    const id = queued.json().deploy.id as string;

    freeMb = 100;
    await disk.check();
    const builder = await startBuilder(t.platform);
    cleanups.push(() => builder.stop());
    expect(await p.finished(id)).toMatchObject({ status: 'failed', failureReason: 'disk_full', gitSha: null });
    const log = await p.log(id);
    expect(log).toContain(DISK_FULL_BUILD_LINE);
    expect(log).not.toContain('BUILD-RAN');
    expect(existsSync(path.join(dataDir, 'artifacts', id))).toBe(false);
    // While it lasts the API takes no new deploy either.
    expect((await p.deploy()).statusCode).toBe(503);

    freeMb = 2000;
    await disk.check();
    const again = await p.deploy();
    expect(again.statusCode).toBe(202);
    expect(await p.finished(again.json().deploy.id)).toMatchObject({ status: 'ready', failureReason: null });
  });
});

describe.skipIf(TMPFS_SKIP_REASON)(`a build whose artifact does not fit${TMPFS_SKIP_REASON ? ` (skipped: ${TMPFS_SKIP_REASON})` : ''}`, () => {
  it('fails as disk_full, keeps nothing of the artifact, and the disk is free again', { timeout: 120_000 }, async () => {
    const fs = mountTmpfs(8);
    cleanups.push(() => fs.unmount());
    // DATA_DIR on the small disk with no threshold and no build floor: only the artifact's copy finds it full (with
    // them, output-quota.test.ts: an output that would take the disk under the floor is not even copied). PGlite and
    // the bus's log, the same adapters, live beside it: they would not fit in 8 MB.
    const engines = mkdtempSync(path.join(os.tmpdir(), 'disk-full-engines-'));
    const db = await createPgliteWorkerStore(path.join(engines, 'pglite'));
    const bus = createInProcessBus({ logDir: path.join(engines, 'bus') });
    cleanups.push(async () => {
      await bus.close();
      await db.close();
      rmSync(engines, { recursive: true, force: true });
    });
    const t = await buildTestApi({
      processors: true,
      env: { ALLOW_LOCAL_REPOS: 'true', BUILD_SANDBOX: 'off', DATA_DIR: fs.dir, DATA_DIR_MIN_FREE_MB: '0', BUILD_MIN_FREE_MB: '0' },
      overrides: { db, bus },
    });
    cleanups.push(() => t.close());
    const freeBefore = fs.freeBytes();
    const p = await projectBuilding(t, 'mkdir -p out && head -c 12582912 /dev/zero > out/big.bin && echo small > out/index.html');
    const queued = await p.deploy();
    expect(queued.statusCode).toBe(202);
    const id = queued.json().deploy.id as string;
    expect(await p.finished(id)).toMatchObject({ status: 'failed', failureReason: 'disk_full' });
    expect(await p.log(id)).toContain(DISK_FULL_BUILD_LINE);
    expect(existsSync(path.join(fs.dir, 'artifacts', id))).toBe(false);
    expect(fs.freeBytes()).toBeGreaterThanOrEqual(freeBefore - MB);
  });
});
