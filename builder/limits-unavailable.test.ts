import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../test/support/accounts.ts';
import { gitRepoWith } from '../test/support/git-repo.ts';
import { LIMITS_UNAVAILABLE_LINE, UNLIMITED_BUILD_LINE } from './build-run.ts';
import type { CgroupHost } from './sandbox/build-cgroup.ts';

/**
 * Builds never run unlimited unless the operator says so (issue 38, row 4). On a host where no cgroup can be made
 * for a build (no delegated cgroup v2 subtree, no v1 hierarchies: a container without /sys/fs/cgroup, a v2 host
 * without delegation), every deploy fails at once with limits_unavailable, counted by reason, and the start says
 * why on stderr; the start log no longer claims builds run sandboxed with limits. With BUILD_ALLOW_UNLIMITED=true
 * they run, and every start and every build log warns. The host without cgroups is a fake one: empty
 * /proc/self/cgroup and mountinfo.
 */
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  vi.restoreAllMocks();
});

function noCgroups(): CgroupHost {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'no-cgroups-'));
  writeFileSync(path.join(dir, 'cgroup'), '');
  writeFileSync(path.join(dir, 'mountinfo'), '');
  return { cgroupFile: path.join(dir, 'cgroup'), mountinfoFile: path.join(dir, 'mountinfo') };
}

async function deployOnce(env: Record<string, string>) {
  const stderr: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
    stderr.push(String(chunk));
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write);
  const t = await buildTestApi({
    processors: true,
    env: { ALLOW_LOCAL_REPOS: 'true', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'nolimits-data-')), ...env },
    builder: { cgroupHost: noCgroups() },
  });
  cleanups.push(() => t.close());
  const owner = await signUpAndSignIn(t.app, t.platform);
  const p = await createProject(t.app, owner.cookie);
  const S = sessionHeaders(owner.cookie);
  const repoUrl = gitRepoWith({ 'build.sh': 'echo BUILD-RAN && mkdir -p out && echo ran > out/index.html' });
  const settings = await t.app.inject({
    method: 'PATCH',
    url: `/v1/projects/${p.slug}/deploys/settings`,
    headers: S,
    payload: { repoUrl, buildCommand: 'sh build.sh', outputDir: 'out' },
  });
  expect(settings.statusCode).toBe(200);
  const queued = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: S, payload: { branch: 'main' } });
  expect(queued.statusCode).toBe(202);
  const id = queued.json().deploy.id as string;
  const deploy = async () => (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}`, headers: S })).json().deploy;
  await vi.waitFor(async () => expect(['ready', 'failed']).toContain((await deploy()).status), { timeout: 60_000, interval: 100 });
  const page = (await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/logs`, headers: S })).json() as { lines: Array<{ line: string }> };
  const log = page.lines.map((l) => l.line).join('\n');
  return { t, deploy: await deploy(), log, stderr: stderr.join('') };
}

describe('a builder that cannot make cgroups', () => {
  it('fails every build at once with limits_unavailable (counted), saying why at start and in the build log; nothing runs', async () => {
    const r = await deployOnce({});
    expect(r.deploy).toMatchObject({ status: 'failed', failureReason: 'limits_unavailable', gitSha: null });
    expect(r.log).toContain(LIMITS_UNAVAILABLE_LINE);
    expect(r.log).toContain('cgroup v2: not mounted');
    expect(r.log).not.toContain('BUILD-RAN');
    expect(r.stderr).toContain('every deploy fails with limits_unavailable');
    expect(r.t.builder!.stats()).toEqual({ ready: 0, canceled: 0, failed: { limits_unavailable: 1 } });
  });

  it('with BUILD_ALLOW_UNLIMITED=true builds run, and the start and the build log warn', async () => {
    const r = await deployOnce({ BUILD_ALLOW_UNLIMITED: 'true' });
    expect(r.deploy, r.log).toMatchObject({ status: 'ready' });
    expect(r.log).toContain(UNLIMITED_BUILD_LINE);
    expect(r.log).toContain('BUILD-RAN');
    expect(r.stderr).toContain('WARNING: BUILD_ALLOW_UNLIMITED=true: builds run without memory or process limits');
  });
});
