import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startErrorConsumer } from '../../processor/errors/error-consumer.ts';
import type { Subscription } from '../../platform/ports/bus.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { newId } from '../../platform/tokens.ts';
import { readCommits } from '../../builder/commits/read-commits.ts';
import { deployCommitsRepository } from '../../domain/deploys/deploy-commits-repository.ts';

/** Suspect commits (issue 41) through HTTP: commits recorded from a local repository's checkout, an issue's suspects. */
describe('deploy commits and suspect commits', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let sub: Subscription;
  let cookie: string;
  let dir: string;

  beforeAll(async () => {
    t = await buildTestApi();
    sub = await startErrorConsumer(t.platform);
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
    dir = mkdtempSync(path.join(os.tmpdir(), 'suspect-repo-'));
  });
  afterAll(async () => {
    await sub?.stop();
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'core.hooksPath=/dev/null', '-C', dir, ...args], { env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' } })
      .toString()
      .trim();
  const commit = (file: string, subject: string, author: string) => {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), subject);
    git('add', '-A');
    git('-c', `user.name=${author}`, '-c', `user.email=${author.toLowerCase()}@example.com`, 'commit', '-q', '-m', subject);
    return git('rev-parse', 'HEAD');
  };
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: sessionHeaders(cookie) });
  const deploy = async (projectId: string, sha: string, minutesAgo: number) => {
    const id = newId('dep_');
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at)
       VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now() - make_interval(mins => $4), now() - make_interval(mins => $4), now() - make_interval(mins => $4))`,
      [id, projectId, sha, minutesAgo],
    );
    return id;
  };

  it("names the commit of the issue's first-seen deploy that touched its first in-app frame's file", async () => {
    git('init', '-q', '-b', 'main');
    const base = commit('README.md', 'start', 'Ada');
    const c1 = commit('public/assets/users.js', 'users: read the id of the session user', 'Grace');
    const c2 = commit('src/util.ts', 'util: helpers', 'Linus');
    const c3 = commit('public/assets/style.css', 'style: wider', 'Ada');
    const p = await createProject(t.app, cookie);
    const previous = await deploy(p.id, base, 30);
    const current = await deploy(p.id, c3, 10);
    // What the builder does after its checkout (build-run.ts): the commits since the previous production deploy.
    expect(await deployCommitsRepository.previousProductionSha(t.platform.db, p.id, current)).toBe(base);
    const read = await readCommits(dir, base);
    if (!read.ok) throw new Error(read.reason);
    await deployCommitsRepository.save(t.platform.db, current, read.commits);

    const list = await get(`/v1/projects/${p.slug}/deploys/${current}/commits`);
    expect(list.statusCode).toBe(200);
    expect(list.json().commits.map((c: { sha: string }) => c.sha)).toEqual([c3, c2, c1]);
    expect(list.json().commits[2]).toMatchObject({ author: 'Grace', subject: 'users: read the id of the session user', files: ['public/assets/users.js'] });
    expect(list.body).not.toContain('@example.com');
    expect((await get(`/v1/projects/${p.slug}/deploys/${previous}/commits`)).json().commits).toEqual([]);

    // The default event's first in-app frame is https://<host>/assets/users.js.
    await t.platform.bus.publish(TOPICS.errorEvents, [
      { key: p.id, value: encodeErrorBatchV1(batch(p.id, [event({ name: 'SuspectBug', deployId: current })], { originHost: null })) },
    ]);
    await processed(t.platform);
    const issues = (await get(`/v1/projects/${p.slug}/errors`)).json().data;
    expect(issues).toHaveLength(1);
    const res = await get(`/v1/projects/${p.slug}/errors/${issues[0].groupId}/suspect-commits`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ deployId: current, file: expect.stringContaining('/assets/users.js') });
    expect(res.json().commits.map((c: { sha: string }) => c.sha)).toEqual([c1]);
    expect(res.json().commits[0]).toMatchObject({ author: 'Grace', matched: ['public/assets/users.js'] });

    // Another deploy by query: the previous one has no commits recorded.
    expect((await get(`/v1/projects/${p.slug}/errors/${issues[0].groupId}/suspect-commits?deploy=${previous}`)).json()).toMatchObject({
      deployId: previous,
      commits: [],
    });
    // Another project's deploy, an unknown issue or deploy: 404.
    const other = await createProject(t.app, cookie);
    const foreign = await deploy(other.id, c3, 5);
    const refused = await get(`/v1/projects/${p.slug}/errors/${issues[0].groupId}/suspect-commits?deploy=${foreign}`);
    expect(refused.statusCode).toBe(404);
    expect(refused.json().error).toBe('not_found');
    expect((await get(`/v1/projects/${p.slug}/errors/grp_nope/suspect-commits`)).statusCode).toBe(404);
    expect((await get(`/v1/projects/${p.slug}/deploys/dep_nope/commits`)).statusCode).toBe(404);
    expect((await get(`/v1/projects/${p.slug}/deploys/${foreign}/commits`)).statusCode).toBe(404);
  });
});
