import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildSync } from 'esbuild';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';

/**
 * Issue 37, "From our own builds, with no configuration": a deploy of an esbuild bundle (minified, content-hashed names,
 * linked maps) through the builder keeps its maps privately, indexed by the path the site serves each file at, says in
 * the build log what it kept and refused, and its site answers the maps 404 until the project opts in.
 */
let api: Awaited<ReturnType<typeof buildTestApi>>;
let app: FastifyInstance;
let platform: Platform;
let owner: SignedInUser;
let repo: string;
let js: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();

beforeAll(async () => {
  // The repository holds the bundle already built (the build sandbox has no node); the build copies it out.
  repo = mkdtempSync(path.join(os.tmpdir(), 'maps-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  mkdirSync(path.join(repo, 'src'));
  writeFileSync(
    path.join(repo, 'src', 'checkout.ts'),
    "export function payNow(amount: number): number {\n  if (amount < 0) throw new Error('negative amount');\n  return amount;\n}\n",
  );
  writeFileSync(path.join(repo, 'src', 'main.ts'), "import { payNow } from './checkout';\n(globalThis as any).pay = () => payNow(-1);\n");
  buildSync({
    entryPoints: [path.join(repo, 'src', 'main.ts')],
    bundle: true,
    minify: true,
    sourcemap: true,
    entryNames: '[name]-[hash]',
    outdir: path.join(repo, 'dist', 'assets'),
    absWorkingDir: repo,
    logLevel: 'silent',
  });
  js = readdirSync(path.join(repo, 'dist', 'assets')).find((f) => f.endsWith('.js'))!;
  writeFileSync(path.join(repo, 'dist', 'index.html'), `<script src="/assets/${js}"></script>`);
  // What a hostile build could leave: a map that is not JSON, a comment naming a file outside the output.
  writeFileSync(path.join(repo, 'dist', 'assets', 'broken.js.map'), '{"version": 3,');
  writeFileSync(path.join(repo, 'dist', 'assets', 'sneaky.js'), 'x()\n//# sourceMappingURL=../../../etc/passwd\n');
  writeFileSync(path.join(repo, 'build.sh'), 'cp -r dist out\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'bundle');

  api = await buildTestApi({
    processors: true,
    // Unsandboxed, as disk-full.test.ts: the sandbox is not what this tests, and not every test machine has bwrap.
    env: { ALLOW_LOCAL_REPOS: 'true', BUILD_SANDBOX: 'off', BUILD_TIMEOUT_MS: '20000', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'maps-data-')) },
  });
  app = api.app;
  platform = api.platform;
  owner = await signUpAndSignIn(app, platform);
});

afterAll(async () => api?.close());

async function deployed() {
  const p = await createProject(app, owner.cookie, { defaultBranch: 'main' });
  const settings = await app.inject({
    method: 'PATCH',
    url: `/v1/projects/${p.slug}/deploys/settings`,
    headers: sessionHeaders(owner.cookie),
    payload: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
  });
  expect(settings.statusCode).toBe(200);
  const queued = await app.inject({
    method: 'POST',
    url: `/v1/projects/${p.slug}/deploys`,
    headers: sessionHeaders(owner.cookie),
    payload: { branch: 'main' },
  });
  expect(queued.statusCode).toBe(202);
  const id: string = queued.json().deploy.id;
  const deploy = async () => (await app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: sessionHeaders(owner.cookie) })).json().deploy;
  await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await deploy()).status), { timeout: 30_000, interval: 100 });
  return { project: p, deploy: await deploy() };
}

async function logLines(deployId: string): Promise<string[]> {
  const rows = await platform.analytics.query<{ line: string }>('SELECT line FROM deploy_logs FINAL WHERE deploy_id = {d:String} ORDER BY seq', {
    d: deployId,
  });
  return rows.map((r) => r.line);
}

describe("a deploy's source maps", () => {
  it('are kept privately from the build, refusals and a summary in the build log; the site answers them 404 until the project opts in', async () => {
    const { project, deploy } = await deployed();
    expect(deploy.status).toBe('ready');

    const maps = await sourceMapsRepository.listForDeploy(platform.db, deploy.id);
    expect(maps).toEqual([{ mapName: `assets/${js}.map`, servedPath: `/assets/${js}`, debugId: null, size: expect.any(Number) }]);
    const [ref] = await sourceMapsRepository.candidates(platform.db, [project.id], [`/assets/${js}`], []);
    const content = JSON.parse((await sourceMapsRepository.contents(platform.db, [ref!.id])).get(ref!.id)!.toString());
    expect(content.sourcesContent.join('\n')).toContain('negative amount');

    await vi.waitFor(async () => expect((await logLines(deploy.id)).some((l) => l.startsWith('kept '))).toBe(true), { timeout: 10_000 });
    const lines = await logLines(deploy.id);
    expect(lines).toContainEqual(expect.stringMatching(/^source map refused \(map_invalid_json\): assets\/broken\.js\.map: /));
    expect(lines).toContainEqual(expect.stringMatching(/^source map refused \(map_outside_output\): assets\/sneaky\.js: /));
    expect(lines).toContain(`kept 1 source map (${Math.ceil(maps[0]!.size / 1024)} KB) for symbolication; refused 2: map_outside_output 1, map_invalid_json 1`);

    // The public hosts: the JS (its sourceMappingURL comment left in) is served, its map is the same 404 as a missing file.
    const site = (url: string) => app.inject({ url, headers: { host: `${project.slug}.localhost` } });
    expect((await site(`/assets/${js}`)).body).toContain(`sourceMappingURL=${js}.map`);
    const missing = await site('/assets/no-such-file.js');
    const hidden = await site(`/assets/${js}.map`);
    expect([hidden.statusCode, hidden.body, hidden.headers['content-type']]).toEqual([404, missing.body, missing.headers['content-type']]);

    // Opted in: served (within the site cache's 2 s); opted out again: 404 again.
    const optIn = (serveSourceMaps: boolean) =>
      app.inject({ method: 'PATCH', url: `/v1/projects/${project.slug}`, headers: sessionHeaders(owner.cookie), payload: { serveSourceMaps } });
    expect((await optIn(true)).json().project.serveSourceMaps).toBe(true);
    await vi.waitFor(async () => expect((await site(`/assets/${js}.map`)).statusCode).toBe(200), { timeout: 10_000, interval: 100 });
    expect(JSON.parse((await site(`/assets/${js}.map`)).body).sourcesContent.join('\n')).toContain('negative amount');
    await optIn(false);
    await vi.waitFor(async () => expect((await site(`/assets/${js}.map`)).statusCode).toBe(404), { timeout: 10_000, interval: 100 });
  });
});
