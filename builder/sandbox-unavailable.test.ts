import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';

/**
 * Secure by default: a builder that cannot sandbox (bubblewrap missing: macOS, a machine without the package) fails
 * every build at once with sandbox_unavailable and a log line naming the package, instead of running it unsandboxed.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;
let repo: string;

beforeAll(async () => {
  repo = mkdtempSync(path.join(os.tmpdir(), 'nosandbox-repo-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: repo });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, 'build.sh'), 'mkdir -p out && echo ran > out/index.html && touch /tmp/ran-unsandboxed');
  git('add', '.');
  git('commit', '-q', '-m', 'one');
  t = await buildTestApi({
    processors: true,
    env: { ALLOW_LOCAL_REPOS: 'true', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'nosandbox-data-')) },
    builder: { bwrap: '/nonexistent/bwrap' },
  });
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

describe('a builder without bubblewrap', () => {
  it('fails the build at once with sandbox_unavailable, naming the package to install; nothing runs', async () => {
    const p = await createProject(t.app, owner.cookie);
    const S = sessionHeaders(owner.cookie);
    expect(
      (
        await t.app.inject({
          method: 'PATCH',
          url: `/v1/projects/${p.slug}/deploys/settings`,
          headers: S,
          payload: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
        })
      ).statusCode,
    ).toBe(200);
    const queued = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: S, payload: { branch: 'main' } });
    expect(queued.statusCode).toBe(202);
    const id = queued.json().deploy.id as string;
    const deploy = async () => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: S })).json().deploy;
    await vi.waitFor(async () => expect((await deploy()).status).toBe('failed'), { timeout: 20_000, interval: 50 });
    expect(await deploy()).toMatchObject({ status: 'failed', failureReason: 'sandbox_unavailable', gitSha: null });
    const log = (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/logs`, headers: S })).json();
    expect(JSON.stringify(log)).toContain('apt-get install bubblewrap');
    // Counted for GET /metrics (service_builds_total) by outcome and reason: once the finish is written, which the
    // deploy's status can show a moment before the builder counts it.
    await vi.waitFor(() => expect(t.builder!.stats()).toEqual({ ready: 0, canceled: 0, failed: { sandbox_unavailable: 1 } }), { timeout: 5_000 });
  });
});
