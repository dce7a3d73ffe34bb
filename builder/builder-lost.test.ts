import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../test/support/accounts.ts';
import { type Builder, startBuilder } from './deploy-builder.ts';

/**
 * The builder_lost warning (issue 38, row 10): said only of a build whose lease really ran out (its builder stopped
 * renewing it, or another took the deploy), never after an ordinary failed or preview build, as it once was after
 * every build that was not a ready production deploy.
 */
type Api = Awaited<ReturnType<typeof buildTestApi>>;
let t: Api;
let builder: Builder;
let dataDir: string;
const warnings: Array<{ msg: string; deployId?: string }> = [];
let repo: string;

function makeRepo(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'lost-repo-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: dir });
  const commit = (branch: string, script: string) => {
    if (branch !== 'main') git('checkout', '-q', '-B', branch, 'main');
    writeFileSync(path.join(dir, 'build.sh'), script);
    git('add', '.');
    git('commit', '-q', '-m', branch);
    git('checkout', '-q', 'main');
  };
  git('init', '-q', '-b', 'main');
  commit('main', 'mkdir -p out && echo site > out/index.html');
  commit('broken', 'echo about to fail; exit 3');
  commit('feature', 'mkdir -p out && echo preview > out/index.html');
  commit('slow', 'sleep 2; mkdir -p out && echo slow > out/index.html');
  return dir;
}

beforeAll(async () => {
  repo = makeRepo();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'lost-data-'));
  // The bus keeps its log in DATA_DIR: the deploy events this builder publishes need no consumer here.
  t = await buildTestApi({ env: { ALLOW_LOCAL_REPOS: 'true', DATA_DIR: dataDir } });
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write(chunk, _enc, done) {
        warnings.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  // A short lease, renewed every 200 ms: a lost one is found within a second.
  builder = await startBuilder({ ...t.platform, logger }, { leaseMs: 600 });
}, 60_000);
afterAll(async () => {
  await builder?.stop();
  await t?.close();
});

async function project(defaultBranch = 'main') {
  const owner = await signUpAndSignIn(t.app, t.platform);
  const S = sessionHeaders(owner.cookie);
  const p = await createProject(t.app, owner.cookie, { defaultBranch });
  const settings = await t.app.inject({
    method: 'PATCH',
    url: `/v1/projects/${p.slug}/deploys/settings`,
    headers: S,
    payload: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
  });
  expect(settings.statusCode).toBe(200);
  const get = async (id: string) => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: S })).json().deploy;
  return {
    get,
    async deploy(branch: string) {
      const queued = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: S, payload: { branch } });
      expect(queued.statusCode).toBe(202);
      return queued.json().deploy.id as string;
    },
    async finished(id: string) {
      await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await get(id)).status), { timeout: 60_000, interval: 100 });
      await builder.idle();
      return get(id);
    },
  };
}

const lostWarnings = (deployId: string) => warnings.filter((w) => w.deployId === deployId && /lost|lease/i.test(w.msg)).map((w) => w.msg);

describe('the builder_lost warning', () => {
  it('is not logged for a failed build, a preview build or a failed preview build, each finished by its builder', { timeout: 120_000 }, async () => {
    const p = await project('main');
    const failing = await project('broken');
    const builds = [
      [p, 'main'],
      [p, 'feature'],
      [p, 'broken'],
      [failing, 'broken'],
    ] as const;
    const ids: string[] = [];
    const outcomes = [];
    for (const [proj, branch] of builds) {
      const id = await proj.deploy(branch);
      ids.push(id);
      outcomes.push(await proj.finished(id));
    }
    expect(outcomes.map((d) => [d.environment, d.status, d.failureReason])).toEqual([
      ['production', 'ready', null],
      ['preview', 'ready', null],
      ['preview', 'failed', 'build_failed'],
      ['production', 'failed', 'build_failed'],
    ]);
    for (const id of ids) expect(lostWarnings(id)).toEqual([]);
    expect(builder.stats().failed.builder_lost ?? 0).toBe(0);
  });

  it('is logged when the lease really ran out: the deploy fails builder_lost and its late result is dropped', { timeout: 120_000 }, async () => {
    const p = await project();
    const id = await p.deploy('slow');
    await vi.waitFor(async () => expect((await p.get(id)).status).toBe('building'), { timeout: 30_000, interval: 50 });
    // Another builder took the deploy and its lease has run out: this one can no longer renew or finish it.
    await t.platform.db.query(`UPDATE deploys SET lease_owner = 'bld_gone', lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
    expect(await p.finished(id)).toMatchObject({ status: 'failed', failureReason: 'builder_lost' });
    await vi.waitFor(() => expect(lostWarnings(id)).toContain('build finished after its lease was taken (builder_lost); result dropped'), { timeout: 30_000 });
    expect(lostWarnings(id)).toContain('builder lost: lease expired');
    expect(builder.stats().failed.builder_lost).toBe(1);
    // Its output, built after the lease was gone, is not left on disk.
    expect(existsSync(path.join(dataDir, 'artifacts', id))).toBe(false);
  });
});
