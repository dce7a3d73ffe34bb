import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { gitRepoWith } from '../../test/support/git-repo.ts';
import { buildCacheFile } from '../../domain/deploys/build-cache-files.ts';
import { evictBuildCaches } from './build-cache.ts';

/**
 * The build cache (issue 42) through the API and real sandboxed builds: the build below says what it found of the
 * previous build's node_modules and npm cache, then leaves its own deploy id in both. Played also by a tenant who
 * tampers with nothing but its own build, and by a poisoned archive on the builder's disk.
 */
type Api = Awaited<ReturnType<typeof buildTestApi>>;

const REPO = gitRepoWith({
  'build.sh': [
    'set -e',
    'mkdir -p out',
    'echo "<h1>site</h1>" > out/index.html',
    'if [ -f node_modules/marker ]; then echo "CACHED-MODULES $(cat node_modules/marker)"; else echo NO-MODULES; fi',
    'if [ -f "$npm_config_cache/marker" ]; then echo "CACHED-NPM $(cat "$npm_config_cache/marker")"; else echo NO-NPM-CACHE; fi',
    'if [ -z "$KEEP" ]; then',
    '  mkdir -p node_modules/.bin "$npm_config_cache"',
    '  echo "$SERVICE_DEPLOY_ID" > node_modules/marker',
    '  echo "$SERVICE_DEPLOY_ID" > "$npm_config_cache/marker"',
    '  ln -sf ../marker node_modules/.bin/marker',
    'fi',
    'if [ -n "$PEEK" ]; then cat "$PEEK" >/dev/null 2>&1 && echo PEEK-READ || echo PEEK-REFUSED; fi',
    'if [ -n "$EXTRA" ]; then sh -c "$EXTRA"; fi',
    'if [ -n "$FAIL" ]; then exit 4; fi',
    'echo BUILD-RAN',
  ].join('\n'),
});
execFileSync('git', ['branch', 'feature'], { cwd: REPO });

describe('the build cache', () => {
  let t: Api;
  let dataDir: string;
  let owner: SignedInUser;
  const headers = () => sessionHeaders(owner.cookie);

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cache-data-'));
    t = await buildTestApi({ processors: true, env: { ALLOW_LOCAL_REPOS: 'true', DATA_DIR: dataDir, BUILD_CACHE_MAX_MB: '1' } });
    owner = await signUpAndSignIn(t.app, t.platform);
  }, 60_000);
  afterAll(async () => t?.close());

  async function project(env: Record<string, string> = {}) {
    const p = await createProject(t.app, owner.cookie, { defaultBranch: 'main' });
    const get = async (id: string) => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: headers() })).json().deploy;
    const setEnv = async (vars: Record<string, string>) => {
      const res = await t.app.inject({
        method: 'PATCH',
        url: `/v1/projects/${p.slug}/deploys/settings`,
        headers: headers(),
        payload: {
          repoUrl: REPO,
          buildCommand: 'sh build.sh',
          outputDir: 'out',
          env: Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, { value: v }])),
        },
      });
      expect(res.statusCode).toBe(200);
    };
    await setEnv(env);
    return {
      id: p.id as string,
      slug: p.slug,
      setEnv,
      archive: (branch = 'main') => buildCacheFile(path.join(dataDir, 'build-cache'), p.id, branch),
      async deploy(branch = 'main', how: { query?: string; body?: Record<string, unknown> } = {}) {
        const queued = await t.app.inject({
          method: 'POST',
          url: `/v1/projects/${p.slug}/deploys${how.query ?? ''}`,
          headers: headers(),
          payload: { branch, ...how.body },
        });
        expect(queued.statusCode).toBe(202);
        const id = queued.json().deploy.id as string;
        await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await get(id)).status), { timeout: 60_000, interval: 100 });
        const lines = (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/logs`, headers: headers() })).json().lines as Array<{ line: string }>;
        return { id, deploy: await get(id), log: lines.map((l) => l.line).join('\n') };
      },
    };
  }

  it("a second build finds the first's node_modules and npm cache; a new branch starts from the default branch's", { timeout: 180_000 }, async () => {
    const p = await project();
    const first = await p.deploy();
    expect(first.deploy, first.log).toMatchObject({ status: 'ready' });
    expect(first.log).toContain('no build cache');
    expect(first.log).toContain('NO-MODULES');
    expect(first.log).toMatch(/build cache saved \([\d.]+ MB\)/);
    expect(existsSync(p.archive())).toBe(true);

    const second = await p.deploy();
    expect(second.deploy, second.log).toMatchObject({ status: 'ready' });
    expect(second.log).toMatch(/build cache restored \([\d.]+ MB, from main\)/);
    expect(second.log).toContain(`CACHED-MODULES ${first.id}`);
    expect(second.log).toContain(`CACHED-NPM ${first.id}`);

    // A new branch reads main's cache and saves its own; main's stays as it was.
    const feature = await p.deploy('feature');
    expect(feature.deploy, feature.log).toMatchObject({ status: 'ready' });
    expect(feature.log).toContain('build cache restored');
    expect(feature.log).toContain('from main');
    expect(feature.log).toContain(`CACHED-MODULES ${second.id}`);
    expect(existsSync(p.archive('feature'))).toBe(true);
    const third = await p.deploy();
    expect(third.log).toContain(`CACHED-MODULES ${second.id}`);
  });

  it('a deploy queued with ?cache=false (or "cache": false) restores nothing, says "build cache skipped", and saves afresh', { timeout: 180_000 }, async () => {
    const p = await project();
    const first = await p.deploy();
    expect(first.log).toContain('build cache saved');
    const skipped = await p.deploy('main', { query: '?cache=false' });
    expect(skipped.deploy, skipped.log).toMatchObject({ status: 'ready' });
    expect(skipped.log).toContain('build cache skipped');
    expect(skipped.log).not.toContain('build cache restored');
    expect(skipped.log).toContain('NO-MODULES');
    expect(skipped.log).toContain('NO-NPM-CACHE');
    expect(skipped.log).toContain('build cache saved');
    // The mark is the deploy's only: the next build restores what the skipped one saved.
    const next = await p.deploy();
    expect(next.log).toContain(`CACHED-MODULES ${skipped.id}`);
    const byBody = await p.deploy('main', { body: { cache: false } });
    expect(byBody.log).toContain('build cache skipped');
    expect(byBody.log).toContain('NO-MODULES');
    // ?cache=true is the default; anything else is a 400 with a spec code, and no deploy.
    expect((await p.deploy('main', { query: '?cache=true' })).log).toContain(`CACHED-MODULES ${byBody.id}`);
    const bad = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys?cache=no`, headers: headers(), payload: {} });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toBe('invalid_request');
    // A bodyless POST is a deploy of the default branch.
    const bodyless = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys?cache=false`, headers: headers() });
    expect(bodyless.statusCode).toBe(202);
    await vi.waitFor(
      async () => {
        const d = (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${bodyless.json().deploy.id}`, headers: headers() })).json().deploy;
        expect(d.status).toBe('ready');
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(readdirSync(path.dirname(p.archive())).filter((n) => n.endsWith('.skip'))).toEqual([]);
  });

  it('a build that leaves the restored cache as it was keeps the archive as it is ("build cache unchanged")', { timeout: 180_000 }, async () => {
    const p = await project();
    const first = await p.deploy();
    expect(first.log).toContain('build cache saved');
    await p.setEnv({ KEEP: '1' });
    const kept = await p.deploy();
    expect(kept.deploy, kept.log).toMatchObject({ status: 'ready' });
    expect(kept.log).toContain(`CACHED-MODULES ${first.id}`);
    expect(kept.log).toMatch(/build cache unchanged \([\d.]+ MB\)/);
    expect(kept.log).not.toContain('build cache saved');
    await p.setEnv({ KEEP: '' });
    const changed = await p.deploy();
    expect(changed.log).toContain(`CACHED-MODULES ${first.id}`);
    expect(changed.log).toContain('build cache saved');
  });

  it("another project's build gets nothing of a project's cache, not even by its path", { timeout: 180_000 }, async () => {
    const a = await project();
    expect((await a.deploy()).deploy).toMatchObject({ status: 'ready' });
    expect(existsSync(a.archive())).toBe(true);
    const b = await project({ PEEK: a.archive() });
    const r = await b.deploy();
    expect(r.deploy, r.log).toMatchObject({ status: 'ready' });
    expect(r.log).toContain('no build cache');
    expect(r.log).toContain('NO-MODULES');
    expect(r.log).toContain('PEEK-REFUSED');
  });

  it('a failed build saves nothing; a cache over BUILD_CACHE_MAX_MB is not saved, and the build still succeeds', { timeout: 180_000 }, async () => {
    const p = await project({ FAIL: '1' });
    const failed = await p.deploy();
    expect(failed.deploy).toMatchObject({ status: 'failed', failureReason: 'build_failed' });
    expect(failed.log).not.toContain('build cache saved');
    expect(existsSync(p.archive())).toBe(false);

    await p.setEnv({ FAIL: '', EXTRA: 'head -c 2000000 /dev/zero > node_modules/big' });
    const big = await p.deploy();
    expect(big.deploy, big.log).toMatchObject({ status: 'ready' });
    expect(big.log).toContain('build cache not saved: over BUILD_CACHE_MAX_MB (1 MB)');
    expect(existsSync(p.archive())).toBe(false);
  });

  it('DELETE .../deploys/cache clears every branch of the project (deploys:write); the next build starts cold', { timeout: 180_000 }, async () => {
    const p = await project();
    const first = await p.deploy();
    expect(first.deploy, first.log).toMatchObject({ status: 'ready' });
    expect((await p.deploy('feature')).deploy).toMatchObject({ status: 'ready' });
    expect([existsSync(p.archive()), existsSync(p.archive('feature'))]).toEqual([true, true]);
    const url = `/v1/projects/${p.slug}/deploys/cache`;
    // A read-only key may not; a stranger's session finds no such project; neither touches the cache.
    const reader = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:read'] });
    expect((await t.app.inject({ method: 'DELETE', url, headers: bearer(reader.token) })).statusCode).toBe(403);
    const stranger = await signUpAndSignIn(t.app, t.platform);
    const foreign = await t.app.inject({ method: 'DELETE', url, headers: sessionHeaders(stranger.cookie) });
    expect(foreign.statusCode).toBe(404);
    expect(existsSync(p.archive())).toBe(true);
    const writer = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:write'] });
    expect((await t.app.inject({ method: 'DELETE', url, headers: bearer(writer.token) })).statusCode).toBe(204);
    expect([existsSync(p.archive()), existsSync(p.archive('feature'))]).toEqual([false, false]);
    const cold = await p.deploy();
    expect(cold.log).toContain('no build cache');
    expect(cold.log).toContain('NO-MODULES');
  });

  describe('a poisoned cache is dropped, with a line saying why, and the build goes on without it', () => {
    async function poisoned(make: (archive: string) => void) {
      const p = await project();
      expect((await p.deploy()).deploy).toMatchObject({ status: 'ready' });
      make(p.archive());
      const r = await p.deploy();
      expect(r.deploy, r.log).toMatchObject({ status: 'ready' });
      expect(r.log).toContain('NO-MODULES');
      // Saved afresh by the build that dropped it.
      expect(r.log).toContain('build cache saved');
      return r.log;
    }
    /** A ustar archive written entry by entry (GNU tar would not write `..` names): type 0 a file, 2 a link, 5 a directory. */
    function rawTar(archive: string, entries: Array<{ name: string; type: '0' | '2' | '5'; data?: string; link?: string }>) {
      const blocks: Buffer[] = [];
      for (const e of entries) {
        const data = Buffer.from(e.data ?? '');
        const h = Buffer.alloc(512);
        const put = (at: number, len: number, v: string) => h.write(v.slice(0, len), at, 'utf8');
        put(0, 100, e.name);
        put(100, 8, e.type === '0' ? '0000644\0' : '0000755\0');
        put(108, 8, '0000000\0');
        put(116, 8, '0000000\0');
        put(124, 12, `${data.length.toString(8).padStart(11, '0')}\0`);
        put(136, 12, '00000000000\0');
        put(148, 8, '        ');
        put(156, 1, e.type);
        put(157, 100, e.link ?? '');
        put(257, 8, 'ustar\u000000');
        const sum = h.reduce((n, b) => n + b, 0);
        put(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
        blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
      }
      writeFileSync(archive, Buffer.concat([...blocks, Buffer.alloc(1024)]));
    }
    /** A tar archive of `tree` (made under a fresh directory), with GNU tar's own options. */
    function tarOf(archive: string, tree: (dir: string) => void, ...names: string[]) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'poison-'));
      tree(dir);
      execFileSync('tar', ['-cf', archive, '-C', dir, ...names]);
    }

    it('a corrupt archive', { timeout: 120_000 }, async () => {
      const log = await poisoned((archive) => writeFileSync(archive, 'not a tar archive at all'.repeat(100)));
      expect(log).toContain('build cache dropped: the archive is not readable (corrupt or truncated)');
    });

    it('an archive whose link escapes node_modules (and a file written through it)', { timeout: 120_000 }, async () => {
      const outside = mkdtempSync(path.join(os.tmpdir(), 'outside-'));
      const log = await poisoned((archive) =>
        rawTar(archive, [
          { name: 'node_modules/', type: '5' },
          { name: 'node_modules/evil', type: '2', link: outside },
          { name: 'node_modules/evil/pwned', type: '0', data: 'pwned' },
        ]),
      );
      expect(log).toMatch(/build cache dropped: (the link node_modules\/evil points outside its tree|the archive could not be extracted)/);
      expect(existsSync(path.join(outside, 'pwned'))).toBe(false);
      const up = await poisoned((archive) =>
        tarOf(
          archive,
          (dir) => {
            mkdirSync(path.join(dir, 'node_modules'));
            symlinkSync('../../../..', path.join(dir, 'node_modules', 'up'));
          },
          'node_modules',
        ),
      );
      expect(up).toContain('build cache dropped: the link node_modules/up points outside its tree (../../../..)');
    });

    it('an archive naming `..` or an absolute path, or more than node_modules and cache', { timeout: 180_000 }, async () => {
      const outside = mkdtempSync(path.join(os.tmpdir(), 'outside-'));
      const dotdot = await poisoned((archive) => rawTar(archive, [{ name: 'node_modules/../../../planted', type: '0', data: 'x' }]));
      expect(dotdot).toContain('build cache dropped: the archive names a path outside the build (node_modules/../../../planted)');
      const absolute = await poisoned((archive) => rawTar(archive, [{ name: `${outside}/planted`, type: '0', data: 'x' }]));
      expect(absolute).toContain('build cache dropped: the archive names a path outside the build');
      expect(existsSync(path.join(outside, 'planted'))).toBe(false);
      const other = await poisoned((archive) => tarOf(archive, (dir) => writeFileSync(path.join(dir, 'build.sh'), 'echo PLANTED'), 'build.sh'));
      expect(other).toContain('build cache dropped: the archive holds more than node_modules');
      expect(other).not.toContain('PLANTED');
    });
  });
});

describe('build cache eviction', () => {
  it('past the total, the least recently used archives go, never the one just saved', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'evict-'));
    const files = ['p1', 'p2', 'p3'].map((p, i) => {
      const f = buildCacheFile(dir, p, 'main');
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(f, Buffer.alloc(1000));
      utimesSync(f, new Date(1000 * (i + 1)), new Date(1000 * (i + 1)));
      return f;
    });
    // p1 is the oldest, but just saved: p2 goes, then the total fits.
    expect(await evictBuildCaches(dir, 2000, files[0])).toEqual([files[1]]);
    expect(files.map((f) => existsSync(f))).toEqual([true, false, true]);
  });

  it("removes a save's temporary copy a killed process left, never one a save may still be writing", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'evict-tmp-'));
    const f = buildCacheFile(dir, 'p1', 'main');
    mkdirSync(path.dirname(f), { recursive: true });
    const [left, writing] = [`${f}.aaaa.tmp`, `${f}.bbbb.tmp`];
    writeFileSync(left, Buffer.alloc(10));
    writeFileSync(writing, Buffer.alloc(10));
    utimesSync(left, new Date(1000), new Date(1000));
    expect(await evictBuildCaches(dir, 1_000_000)).toEqual([]);
    expect([existsSync(left), existsSync(writing)]).toEqual([false, true]);
  });
});
