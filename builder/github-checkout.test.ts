import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';
import { startGithubStandin, type GithubStandin, type StandinInstallation } from '../test/support/github-standin.ts';
import { steerableGuard } from '../test/support/outbound-guard.ts';

/**
 * A private repository connected through the GitHub App builds (issue 38): the builder mints an installation token for
 * that one repository (contents: read) and the sandboxed clone reads it over git's smart HTTP, through the build's
 * egress proxy, from the GitHub stand-in on loopback (which answers 401 to any other credential). The token is in
 * neither the build's environment, the checkout's .git/config, the build log nor the artifact; the build step cannot
 * fetch the repository again with it; a project whose source is someone else's connected repository gets no token.
 */
let api: Awaited<ReturnType<typeof buildTestApi>>;
let app: FastifyInstance;
let platform: Platform;
let owner: SignedInUser;
let gh: GithubStandin;
const inst: StandinInstallation = { id: 424_242, account: 'acme', repos: [] };

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** A bare repository whose build writes what it can see of its environment, its checkout's config and a fetch of its own. */
function privateRepo(): string {
  const work = mkdtempSync(path.join(os.tmpdir(), 'gh-private-'));
  git(work, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(work, 'page.html'), '<h1>private page</h1>');
  writeFileSync(
    path.join(work, 'build.sh'),
    [
      'mkdir -p out',
      'cp page.html out/index.html',
      'env > out/env.txt',
      'cat .git/config > out/git-config.txt',
      // The stand-in's certificate is the one the clone was given (builder/build-run.ts): trusted, so only the credential can fail.
      'GIT_SSL_CAINFO=/work/.clone-ca.pem GIT_TERMINAL_PROMPT=0 git ls-remote origin > out/ls-remote.txt 2>&1; echo "ls-remote exit $?" >> out/ls-remote.txt',
      'echo "build done"',
    ].join('\n'),
  );
  git(work, 'add', '.');
  git(work, 'commit', '-q', '-m', 'private');
  const bare = path.join(mkdtempSync(path.join(os.tmpdir(), 'gh-bare-')), 'site.git');
  mkdirSync(bare);
  execFileSync('git', ['clone', '-q', '--bare', work, bare]);
  return bare;
}

beforeAll(async () => {
  gh = await startGithubStandin({ cloneHost: 'git.github.test' });
  inst.repos.push({ id: 515_151, fullName: 'acme/private-site', private: true, dir: privateRepo() });
  gh.installations.set(inst.id, inst);
  gh.access.set('alice', new Set([inst.id]));
  const outbound = steerableGuard({ ca: gh.cert });
  outbound.table['git.github.test'] = ['127.0.0.1'];
  api = await buildTestApi({
    processors: true,
    env: {
      BUILD_TIMEOUT_MS: '30000',
      DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'gh-checkout-data-')),
      ...gh.env,
    },
    overrides: { outbound: outbound.guard },
  });
  app = api.app;
  platform = api.platform;
  owner = await signUpAndSignIn(app, platform);
});
afterAll(async () => {
  await api?.close();
  await gh?.close();
});

async function connectedProject(user: SignedInUser): Promise<string> {
  const p = await createProject(app, user.cookie, { defaultBranch: 'main' });
  const started = await app.inject({
    method: 'POST',
    url: '/v1/integrations/github',
    headers: sessionHeaders(user.cookie),
    payload: { project: p.slug, repository: 'acme/private-site' },
  });
  const state = new URL(started.json().authorizeUrl).searchParams.get('state')!;
  const back = await app.inject({ url: `/v1/integrations/github/callback?code=${gh.codeFor('alice')}&state=${state}`, headers: { cookie: user.cookie } });
  expect(back.headers.location).toContain('github=connected');
  return p.slug;
}

async function deploy(slug: string, repoUrl: string) {
  const settings = await app.inject({
    method: 'PATCH',
    url: `/v1/projects/${slug}/deploys/settings`,
    headers: sessionHeaders(owner.cookie),
    payload: { repoUrl, buildCommand: 'sh build.sh', outputDir: 'out' },
  });
  expect(settings.statusCode).toBe(200);
  const queued = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/deploys`, headers: sessionHeaders(owner.cookie), payload: { branch: 'main' } });
  expect(queued.statusCode).toBe(202);
  const id = queued.json().deploy.id as string;
  await vi.waitFor(
    async () => {
      const d = (await platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [id])).rows[0]!;
      expect(['ready', 'failed', 'canceled']).toContain(d.status);
    },
    { timeout: 60_000, interval: 100 },
  );
  const row = (
    await platform.db.query<{ status: string; artifact_dir: string | null; failure_reason: string | null }>('SELECT * FROM deploys WHERE id = $1', [id])
  ).rows[0]!;
  const log = (await platform.analytics.query<{ line: string }>('SELECT line FROM deploy_logs FINAL WHERE deploy_id = {d:String} ORDER BY seq', { d: id })).map(
    (r) => r.line,
  );
  return { ...row, log, dir: row.artifact_dir && path.resolve(platform.config.DATA_DIR, row.artifact_dir) };
}

describe('a private repository connected through the GitHub App', () => {
  it('clones with an installation token for that repository only, which the build never sees', async () => {
    const slug = await connectedProject(owner);
    const cloneUrl = `${gh.url.replace('127.0.0.1', 'git.github.test')}/acme/private-site.git`;
    const d = await deploy(slug, cloneUrl);
    expect(d.status, d.log.join('\n')).toBe('ready');
    expect(readFileSync(path.join(d.dir!, 'index.html'), 'utf8')).toBe('<h1>private page</h1>');
    // One token, for this repository, read-only; git sent it to the repository and nothing else did.
    const minted = gh.minted.filter((m) => m.installationId === inst.id);
    expect(minted).toHaveLength(1);
    expect(minted[0]).toMatchObject({ repositoryIds: [515_151], permissions: { contents: 'read' } });
    const token = minted[0]!.token;
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    expect(gh.gitAuth.filter((a) => a.endsWith(basic)).length).toBeGreaterThan(0);
    // Not in the build's environment, the checkout's config, the artifact or the log.
    for (const f of ['env.txt', 'git-config.txt', 'ls-remote.txt', 'index.html']) {
      const text = readFileSync(path.join(d.dir!, f), 'utf8');
      expect(text).not.toContain(token);
      expect(text).not.toContain(basic);
    }
    expect(d.log.join('\n')).not.toContain(token);
    expect(readFileSync(path.join(d.dir!, 'env.txt'), 'utf8')).not.toMatch(/GIT_CONFIG|extraHeader/i);
    // The build step fetching its own repository again has no credential: GitHub answers 401.
    expect(readFileSync(path.join(d.dir!, 'ls-remote.txt'), 'utf8')).toMatch(/ls-remote exit [1-9]/);
    expect(gh.gitAuth.at(-1)).toBe('acme/private-site none');
  });

  it("a project whose source is someone else's connected repository gets no token: the clone is refused", async () => {
    await connectedProject(owner);
    const stranger = await signUpAndSignIn(app, platform);
    const p = await createProject(app, stranger.cookie, { defaultBranch: 'main' });
    const before = gh.minted.length;
    const settings = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${p.slug}/deploys/settings`,
      headers: sessionHeaders(stranger.cookie),
      payload: { repoUrl: `${gh.url.replace('127.0.0.1', 'git.github.test')}/acme/private-site.git`, buildCommand: 'sh build.sh', outputDir: 'out' },
    });
    expect(settings.statusCode).toBe(200);
    const queued = await app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/deploys`,
      headers: sessionHeaders(stranger.cookie),
      payload: { branch: 'main' },
    });
    const id = queued.json().deploy.id as string;
    await vi.waitFor(
      async () => expect((await platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [id])).rows[0]!.status).toBe('failed'),
      { timeout: 60_000, interval: 100 },
    );
    expect(gh.minted.length).toBe(before);
  });
});
