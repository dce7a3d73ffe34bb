import { existsSync, mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDiskSpaceWatch, type StatFs } from '../platform/data-dir/disk-space.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';
import { gitRepoWith } from '../test/support/git-repo.ts';
import { DISK_FULL_BUILD_LINE } from './build-deploy.ts';

/**
 * Disk quotas (issue 38, row 3), played by a tenant who fills DATA_DIR with build output: sparse files (which take no
 * blocks in the build, so its own disk limit never sees them, but their full length once copied), many directories,
 * several projects of one account. Outputs are charged at their apparent size to the project (ARTIFACTS_PROJECT_MAX_MB)
 * and the account (ARTIFACTS_ACCOUNT_MAX_MB); past either the deploy fails quota_exceeded naming the limit and nothing
 * of it stays on disk. Builds run sandboxed, as a stranger's do.
 */
const MB = 1024 * 1024;
type Api = Awaited<ReturnType<typeof buildTestApi>>;

/** The build: `$OUT_MB` MB of sparse files (one of 1 MB less, one of 1 MB), an index page, and what `extra` adds. */
const REPO = gitRepoWith({
  'build.sh': [
    'set -e',
    'mkdir -p out',
    'echo "<h1>site</h1>" > out/index.html',
    'if [ "$OUT_MB" -gt 1 ]; then truncate -s "$(( OUT_MB - 1 ))M" out/big.bin; fi',
    'truncate -s 1M out/small.bin',
    'if [ -n "$EXTRA" ]; then sh -c "$EXTRA"; fi',
    'echo BUILD-RAN',
  ].join('\n'),
});

function tenant(t: Api, dataDir: string) {
  let owner: SignedInUser;
  const headers = () => sessionHeaders(owner.cookie);
  return {
    async signUp() {
      owner = await signUpAndSignIn(t.app, t.platform);
    },
    /** A project of this tenant whose builds leave `outMb` MB of sparse output. */
    async project(outMb: number, extra = '') {
      const p = await createProject(t.app, owner.cookie);
      const settings = await t.app.inject({
        method: 'PATCH',
        url: `/v1/projects/${p.slug}/deploys/settings`,
        headers: headers(),
        payload: { repoUrl: REPO, buildCommand: 'sh build.sh', outputDir: 'out', env: { OUT_MB: { value: String(outMb) }, EXTRA: { value: extra } } },
      });
      expect(settings.statusCode).toBe(200);
      const get = async (id: string) => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: headers() })).json().deploy;
      return {
        rollback: (id: string) => t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${id}/rollback`, headers: headers() }),
        async deploy() {
          const queued = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: headers(), payload: { branch: 'main' } });
          expect(queued.statusCode).toBe(202);
          const id = queued.json().deploy.id as string;
          await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await get(id)).status), { timeout: 60_000, interval: 100 });
          const log = JSON.stringify((await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/logs`, headers: headers() })).json());
          return { id, deploy: await get(id), log, kept: existsSync(path.join(dataDir, 'artifacts', id)) };
        },
      };
    },
  };
}

async function chargedBytes(t: Api, id: string): Promise<number | null> {
  const r = await t.platform.db.query<{ artifact_bytes: string | null }>('SELECT artifact_bytes FROM deploys WHERE id = $1', [id]);
  return r.rows[0].artifact_bytes === null ? null : Number(r.rows[0].artifact_bytes);
}

describe('output quotas', () => {
  let t: Api;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'quota-data-'));
    t = await buildTestApi({
      processors: true,
      env: {
        ALLOW_LOCAL_REPOS: 'true',
        DATA_DIR: dataDir,
        ARTIFACTS_PROJECT_MAX_MB: '8',
        ARTIFACTS_ACCOUNT_MAX_MB: '12',
        ARTIFACT_MAX_FILES: '500',
      },
    });
  }, 60_000);
  afterAll(async () => t?.close());

  it('a build output of sparse files past the project limit fails quota_exceeded, naming the limit, and nothing of it stays on disk', {
    timeout: 120_000,
  }, async () => {
    const attacker = tenant(t, dataDir);
    await attacker.signUp();
    // 20 sparse files of 50 MB: 1,000 MB once copied, ~0 blocks in the build.
    const p = await attacker.project(1, 'for i in $(seq 1 20); do truncate -s 50M out/fill$i.bin; done');
    const r = await p.deploy();
    expect(r.deploy).toMatchObject({ status: 'failed', failureReason: 'quota_exceeded' });
    expect(r.log).toContain('BUILD-RAN');
    expect(r.log).toContain('ARTIFACTS_PROJECT_MAX_MB');
    expect(r.kept).toBe(false);
    expect(await chargedBytes(t, r.id)).toBeNull();
  });

  it('sparse files count at their length: 9 MB of them is over an 8 MB project', { timeout: 120_000 }, async () => {
    const attacker = tenant(t, dataDir);
    await attacker.signUp();
    const r = await (await attacker.project(9)).deploy();
    expect(r.deploy).toMatchObject({ status: 'failed', failureReason: 'quota_exceeded' });
    expect(r.kept).toBe(false);
  });

  it('directories count as entries: an output of 600 empty directories fails too_many_files', { timeout: 120_000 }, async () => {
    const attacker = tenant(t, dataDir);
    await attacker.signUp();
    const r = await (await attacker.project(1, 'for i in $(seq 1 600); do mkdir out/d$i; done')).deploy();
    expect(r.deploy).toMatchObject({ status: 'failed', failureReason: 'too_many_files' });
    expect(r.kept).toBe(false);
  });

  it('a project over its limit makes room by releasing its oldest output that is not live', { timeout: 180_000 }, async () => {
    const owner = tenant(t, dataDir);
    await owner.signUp();
    const p = await owner.project(3);
    const first = await p.deploy();
    expect(first.deploy, first.log).toMatchObject({ status: 'ready' });
    // Charged at apparent size: 3 MB of files and the output's directory entries, not the ~0 blocks they took.
    expect(await chargedBytes(t, first.id)).toBeGreaterThanOrEqual(3 * MB);
    const second = await p.deploy();
    expect(second.deploy).toMatchObject({ status: 'ready' });
    // 9 MB would be over 8: the first (no longer live) goes, the live second stays.
    const third = await p.deploy();
    expect(third.deploy, third.log).toMatchObject({ status: 'ready' });
    expect(third.log).toContain(`released older outputs that were not live to make room: ${first.id} of this project`);
    expect(existsSync(path.join(dataDir, 'artifacts', first.id))).toBe(false);
    expect(second.kept && existsSync(path.join(dataDir, 'artifacts', second.id))).toBe(true);
    expect((await p.rollback(first.id)).statusCode).toBe(409);
    expect((await p.rollback(second.id)).statusCode).toBe(200);
  });

  it("an account's projects together past the account total are refused, and nothing of the others' live outputs is released", {
    timeout: 180_000,
  }, async () => {
    const attacker = tenant(t, dataDir);
    await attacker.signUp();
    const a = await (await attacker.project(5)).deploy();
    const b = await (await attacker.project(5)).deploy();
    expect([a.deploy.status, b.deploy.status]).toEqual(['ready', 'ready']);
    // 5 + 5 + 3 is over the account's 12 MB though each project is under its 8 MB; both live outputs stay.
    const c = await (await attacker.project(3)).deploy();
    expect(c.deploy).toMatchObject({ status: 'failed', failureReason: 'quota_exceeded' });
    expect(c.log).toContain('ARTIFACTS_ACCOUNT_MAX_MB');
    expect(c.kept).toBe(false);
    expect([existsSync(path.join(dataDir, 'artifacts', a.id)), existsSync(path.join(dataDir, 'artifacts', b.id))]).toEqual([true, true]);
    // Another account is charged on its own.
    const stranger = tenant(t, dataDir);
    await stranger.signUp();
    expect((await (await stranger.project(3)).deploy()).deploy).toMatchObject({ status: 'ready' });
  });

  it('the compressed copies written beside an output are charged to it, and only as far as the quotas leave room', { timeout: 180_000 }, async () => {
    // Text that compresses to about three quarters (base64 of random bytes): each copy is kept (under 0.9 of the file).
    const text = (files: number, kb: number) => `for i in $(seq 1 ${files}); do head -c ${kb * 768} /dev/urandom | base64 -w 76 > out/t$i.js; done`;
    const apparent = (id: string) => {
      let sum = 0;
      const walk = (dir: string) => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          const p = path.join(dir, e.name);
          if (e.isDirectory()) walk(p);
          else sum += statSync(p).size;
        }
      };
      walk(path.join(dataDir, 'artifacts', id));
      return sum;
    };
    const owner = tenant(t, dataDir);
    await owner.signUp();
    // Room enough: every copy is written, and charged with the output.
    const roomy = await (await owner.project(1, text(4, 100))).deploy();
    expect(roomy.deploy, roomy.log).toMatchObject({ status: 'ready' });
    expect(readdirSync(path.join(dataDir, 'artifacts', roomy.id)).filter((n) => /\.js\.(br|gz)$/.test(n))).toHaveLength(8);
    expect(await chargedBytes(t, roomy.id)).toBeGreaterThanOrEqual(apparent(roomy.id));

    // 1 MB of sparse zeros and 6 MB of text in an 8 MB project (another account: this one's first output stays):
    // the copies (about 9 MB) would take the project past its limit. Those that fit are written; the others' files
    // are served uncompressed, and the charge stays within the limit.
    const other = tenant(t, dataDir);
    await other.signUp();
    const tight = await (await other.project(1, text(6, 1024))).deploy();
    expect(tight.deploy, tight.log).toMatchObject({ status: 'ready' });
    expect(tight.log).toContain('the output quota left no room for some compressed copies');
    const charged = (await chargedBytes(t, tight.id))!;
    expect(charged).toBeGreaterThanOrEqual(apparent(tight.id));
    expect(charged).toBeLessThanOrEqual(8 * MB);
    expect(apparent(tight.id)).toBeLessThanOrEqual(8 * MB);
    const copies = readdirSync(path.join(dataDir, 'artifacts', tight.id)).filter((n) => /\.js\.(br|gz)$/.test(n));
    expect(copies.length).toBeGreaterThan(0);
    expect(copies.length).toBeLessThan(12);
  });

  it('leaves no copy of a refused output anywhere under DATA_DIR/artifacts', () => {
    // Every output kept belongs to a ready deploy (checked after the tests above).
    const dirs = readdirSync(path.join(dataDir, 'artifacts'));
    return t.platform.db
      .query<{ id: string }>(`SELECT id FROM deploys WHERE status = 'ready' AND artifact_dir IS NOT NULL`)
      .then((r) => expect(dirs.sort()).toEqual(r.rows.map((x) => x.id).sort()));
  });
});

describe("the build floor on DATA_DIR's disk", () => {
  it('a build does not start under BUILD_MIN_FREE_MB, and an output that would take the disk under it is not kept', { timeout: 120_000 }, async () => {
    let freeMb = 520;
    const statfs: StatFs = async () => ({ bavail: (freeMb * MB) / 4096, bsize: 4096 });
    const disk = await startDiskSpaceWatch({ dir: '/data', minFreeBytes: 256 * MB, statfs, intervalMs: 0 });
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'floor-data-'));
    const t = await buildTestApi({ processors: true, env: { ALLOW_LOCAL_REPOS: 'true', DATA_DIR: dataDir, BUILD_MIN_FREE_MB: '512' }, overrides: { disk } });
    try {
      const owner = tenant(t, dataDir);
      await owner.signUp();
      const p = await owner.project(16);
      // 8 MB above the floor: the 16 MB output would take the disk under it.
      const over = await p.deploy();
      expect(over.deploy).toMatchObject({ status: 'failed', failureReason: 'disk_full' });
      expect(over.log).toContain('BUILD_MIN_FREE_MB');
      expect(over.kept).toBe(false);
      // Under the build floor but above DATA_DIR_MIN_FREE_MB: the API takes the deploy, the build does not run.
      freeMb = 400;
      const refused = await p.deploy();
      expect(refused.deploy).toMatchObject({ status: 'failed', failureReason: 'disk_full' });
      expect(refused.log).toContain(DISK_FULL_BUILD_LINE);
      expect(refused.log).not.toContain('BUILD-RAN');
      freeMb = 2000;
      expect((await p.deploy()).deploy).toMatchObject({ status: 'ready' });
    } finally {
      await t.close();
    }
  });
});
