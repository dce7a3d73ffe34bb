import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { siteUrls } from '../platform/sites/site-urls.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';
import { gitRepoWith } from '../test/support/git-repo.ts';
import { BUILD_INGEST_KEY_NAME } from './build-variables-repository.ts';

/**
 * A build's variables through HTTP (issue 42): set with /v1/projects/:slug/env, seen by real builds (the build
 * writes its environment into its output): production and preview values apart, a branch's override, every system
 * variable and its VITE_ copy, a secret masked in the log; and framework detection filling an unset output directory.
 */
const SECRET = 'secret-value-of-the-build';
const SYSTEM = ['CX_DEPLOY_ID', 'CX_ENVIRONMENT', 'CX_GIT_SHA', 'CX_BRANCH', 'CX_DEPLOY_URL', 'CX_PRODUCTION_URL', 'CX_INGEST_KEY'];

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

describe('build variables in builds', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;
  let repo: string;
  beforeAll(async () => {
    // The build writes its environment, one NAME=value line each, and prints the secret (to be masked).
    repo = gitRepoWith({
      'build.sh': ['set -e', 'mkdir -p out', 'env > out/env.txt', 'echo "<h1>site</h1>" > out/index.html', 'echo "the token is $TOKEN"'].join('\n'),
    });
    git(repo, 'checkout', '-q', '-b', 'feature');
    git(repo, 'checkout', '-q', '-b', 'other');
    git(repo, 'checkout', '-q', 'main');
    t = await buildTestApi({
      processors: true,
      env: { ALLOW_LOCAL_REPOS: 'true', BUILD_TIMEOUT_MS: '20000', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'build-vars-data-')) },
    });
    owner = await signUpAndSignIn(t.app, t.platform);
  }, 180_000);
  afterAll(async () => t?.close());

  const headers = () => sessionHeaders(owner.cookie);
  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: headers(), ...(payload ? { payload } : {}) });

  async function project(settings: object) {
    const p = await createProject(t.app, owner.cookie, { defaultBranch: 'main' });
    expect((await call('PATCH', `/v1/projects/${p.slug}/deploys/settings`, { repoUrl: repo, ...settings })).statusCode).toBe(200);
    return p;
  }

  async function deploy(slug: string, branch: string) {
    const queued = await call('POST', `/v1/projects/${slug}/deploys`, { branch });
    expect(queued.statusCode).toBe(202);
    const id = queued.json().deploy.id as string;
    const get = async () => (await call('GET', `/v1/projects/${slug}/deploys/${id}`)).json().deploy;
    await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await get()).status), { timeout: 60_000, interval: 100 });
    const d = await get();
    expect(d.status, JSON.stringify(d)).toBe('ready');
    const log = (await call('GET', `/v1/projects/${slug}/deploys/${id}/logs`)).json().lines.map((l: { line: string }) => l.line) as string[];
    return { id, deploy: d, log, artifact: path.join(t.platform.config.DATA_DIR, 'artifacts', id) };
  }

  const envOf = (artifact: string): Record<string, string> =>
    Object.fromEntries(
      readFileSync(path.join(artifact, 'env.txt'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );

  it('gives production and preview builds their own values, a branch its override, and masks a secret in the log', { timeout: 180_000 }, async () => {
    const p = await project({ buildCommand: 'sh build.sh', outputDir: 'out' });
    for (const body of [
      { key: 'API_URL', value: 'https://api.example.com', target: ['production'] },
      { key: 'API_URL', value: 'https://staging.example.com', target: ['preview'] },
      { key: 'API_URL', value: 'https://feature.example.com', branch: 'feature' },
      { key: 'PREVIEW_ONLY', value: 'yes', target: ['preview'] },
      { key: 'TOKEN', value: SECRET, secret: true },
    ])
      expect((await call('POST', `/v1/projects/${p.slug}/env`, body)).statusCode).toBe(201);

    const prod = await deploy(p.slug, 'main');
    const feature = await deploy(p.slug, 'feature');
    const other = await deploy(p.slug, 'other');
    expect(envOf(prod.artifact)).toMatchObject({ API_URL: 'https://api.example.com', TOKEN: SECRET });
    expect(envOf(prod.artifact).PREVIEW_ONLY).toBeUndefined();
    expect(envOf(feature.artifact)).toMatchObject({ API_URL: 'https://feature.example.com', PREVIEW_ONLY: 'yes', TOKEN: SECRET });
    expect(envOf(other.artifact)).toMatchObject({ API_URL: 'https://staging.example.com', PREVIEW_ONLY: 'yes' });
    // Both set in the settings: nothing detected.
    expect(prod.deploy.framework).toBeNull();

    for (const b of [prod, feature]) {
      expect(b.log).toContain('the token is ***');
      expect(b.log.join('\n')).not.toContain(SECRET);
    }
  });

  it('sets every system variable (and its VITE_ copy) in every build, over any variable of the same name', { timeout: 180_000 }, async () => {
    const p = await project({ buildCommand: 'sh build.sh', outputDir: 'out' });
    // A reserved name cannot be set through the API; one already stored (before the rule) is still overridden.
    await t.platform.db.query(`INSERT INTO project_build_env (id, project_id, name, value) VALUES ('env_old', $1, 'CX_BRANCH', 'forged')`, [p.id]);
    const urls = siteUrls(t.platform.config);
    const prod = await deploy(p.slug, 'main');
    const preview = await deploy(p.slug, 'feature');
    const keys = (await call('GET', `/v1/projects/${p.slug}/keys`)).json();
    const ingestKeys = (keys.keys ?? keys.data).filter((k: { name: string; kind: string }) => k.kind === 'ingest' && k.name === BUILD_INGEST_KEY_NAME);
    expect(ingestKeys).toHaveLength(1);

    for (const [b, environment, branch] of [
      [prod, 'production', 'main'],
      [preview, 'preview', 'feature'],
    ] as const) {
      const env = envOf(b.artifact);
      const expected = {
        CX_DEPLOY_ID: b.id,
        CX_ENVIRONMENT: environment,
        CX_GIT_SHA: git(repo, 'rev-parse', branch),
        CX_BRANCH: branch,
        CX_DEPLOY_URL: urls.deploy(b.id),
        CX_PRODUCTION_URL: urls.project(p.slug),
        CX_INGEST_KEY: expect.stringMatching(/^cak_live_/),
      };
      expect(env).toMatchObject(expected);
      for (const k of SYSTEM) expect(env[`VITE_${k}`], k).toBe(env[k]);
      expect(ingestKeys[0].hint).toBe(`${env.CX_INGEST_KEY.slice(0, 'cak_live_'.length + 4)}…`);
    }
    // One ingest key for every build of the project.
    expect(envOf(prod.artifact).CX_INGEST_KEY).toBe(envOf(preview.artifact).CX_INGEST_KEY);
    // Revoked in the key list, it is replaced at the next build.
    const revoked = await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/keys/${ingestKeys[0].id}`, headers: headers() });
    expect(revoked.statusCode).toBeLessThan(300);
    const again = await deploy(p.slug, 'main');
    expect(envOf(again.artifact).CX_INGEST_KEY).toMatch(/^cak_live_/);
    expect(envOf(again.artifact).CX_INGEST_KEY).not.toBe(envOf(prod.artifact).CX_INGEST_KEY);
  });

  it('detects the framework for an unset output directory: logged, recorded, and the output taken from it', { timeout: 180_000 }, async () => {
    const vite = gitRepoWith({
      'package.json': JSON.stringify({ scripts: { build: 'vite build' }, devDependencies: { vite: '^5.0.0' } }),
      'build.sh': 'mkdir -p dist && echo "<h1>vite</h1>" > dist/index.html',
    });
    const p = await createProject(t.app, owner.cookie, { defaultBranch: 'main' });
    expect((await call('PATCH', `/v1/projects/${p.slug}/deploys/settings`, { repoUrl: vite, buildCommand: 'sh build.sh' })).statusCode).toBe(200);
    const b = await deploy(p.slug, 'main');
    expect(b.log).toContainEqual(expect.stringMatching(/^Detected Vite: sh build\.sh → dist/));
    expect(readFileSync(path.join(b.artifact, 'index.html'), 'utf8')).toContain('vite');
    expect(b.deploy.framework).toBe('vite');
  });
});
