import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { processed } from '../../test/support/platform.ts';
import { startErrorConsumer } from '../errors/error-consumer.ts';
import { batch, event } from '../errors/error-pipeline.test-scenarios.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startGithubStandin, type GithubStandin, type StandinRepo } from '../../test/support/github-standin.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { startInboundConsumer } from '../inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../pipeline-consumer.ts';
import { startGithubStatusSweep, type GithubStatusSweep } from './github-status-sweep.ts';

/**
 * Commit statuses and pull-request comments (issue 41) against the GitHub stand-in on loopback (the test-only outbound
 * allowance): a signed push or pull_request delivery through `POST /v1/webhooks/code_host` queues a deploy linked to its
 * commit; the deploy's states are set here as a builder would (no build runs); the sweep is run by hand and tells the
 * stand-in, which checks the installation token's repository and permissions as GitHub does. Errors for a preview go
 * through the error pipeline (its environment stamping names the deploy).
 */
const SECRET = 'github-status-secret-0001';
let api: Awaited<ReturnType<typeof buildTestApi>>;
let app: FastifyInstance;
let platform: Platform;
let owner: SignedInUser;
let gh: GithubStandin;
let consumer: PipelineConsumer<string>;
let errorConsumer: { stop(): Promise<void> };
let sweeper: GithubStatusSweep;
let nextId = 2_000_000_000 + Math.floor(Math.random() * 1_000_000_000);
const suffix = randomUUID().slice(0, 8);
const acme = { id: 0, account: `acme-${suffix}`, repos: [] as StandinRepo[] };
const sha = (c: string) => c.repeat(40);

beforeAll(async () => {
  gh = await startGithubStandin();
  acme.id = nextId++;
  gh.installations.set(acme.id, acme);
  gh.access.set('alice', new Set([acme.id]));
  const outbound = steerableGuard({ unknownNames: 'fail', ca: gh.cert });
  api = await buildTestApi({
    env: { GITHUB_WEBHOOK_SECRETS: SECRET, ...gh.env, BUS_NAME_SUFFIX: `.gh-status-${suffix}`, PUBLIC_BASE_URL: 'https://console.example.test' },
    overrides: { outbound: outbound.guard },
  });
  app = api.app;
  platform = api.platform;
  owner = await signUpAndSignIn(app, platform);
  consumer = await startInboundConsumer(platform);
  errorConsumer = await startErrorConsumer(platform);
  await platform.bus.subscribe(TOPICS.deployRequests, 'builder-standin', async () => {});
  // The sweep is run by hand; its timer never fires within a test. Calls give up after 1.5 s (the hanging stand-in).
  sweeper = startGithubStatusSweep(platform, { intervalMs: 3_600_000, timeoutMs: 1_500 });
});
afterAll(async () => {
  await sweeper?.stop();
  await consumer?.stop();
  await errorConsumer?.stop();
  await api?.close();
  await gh?.close();
});

const handled = () => {
  const s = consumer.stats();
  return s.accepted + s.duplicates + Object.values(s.dropped).reduce((sum: number, x) => sum + (x ?? 0), 0);
};
async function deliver(event: string, payload: unknown) {
  const before = handled();
  const body = JSON.stringify(payload);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/webhooks/code_host',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': await sign(SECRET, body),
    },
    payload: body,
  });
  expect(res.statusCode).toBe(200);
  await vi.waitFor(() => expect(handled()).toBeGreaterThan(before), { timeout: 30_000, interval: 50 });
}
const push = (r: StandinRepo, branch: string, head: string) => ({
  ref: `refs/heads/${branch}`,
  after: head,
  deleted: false,
  repository: { id: r.id, full_name: r.fullName },
  installation: { id: acme.id },
  head_commit: { id: head, message: 'a change' },
});
const pullRequest = (r: StandinRepo, branch: string, head: string, number: number, action = 'opened') => ({
  action,
  number,
  pull_request: { number, head: { ref: branch, sha: head, repo: { id: r.id } } },
  repository: { id: r.id, full_name: r.fullName },
  installation: { id: acme.id },
});

/** A project bound to a new repository of the acme installation through the GitHub App flow. */
async function boundProject(): Promise<{ slug: string; id: string; repo: StandinRepo }> {
  const p = await createProject(app, owner.cookie, { defaultBranch: 'main' });
  const repo = { id: nextId++, fullName: `${acme.account}/site-${nextId}`, private: true };
  acme.repos.push(repo);
  const started = await app.inject({
    method: 'POST',
    url: '/v1/integrations/github',
    headers: sessionHeaders(owner.cookie),
    payload: { project: p.slug, repository: repo.fullName },
  });
  const state = new URL(started.json().authorizeUrl).searchParams.get('state')!;
  const back = await app.inject({ url: `/v1/integrations/github/callback?code=${gh.codeFor('alice')}&state=${state}`, headers: { cookie: owner.cookie } });
  expect(back.headers.location).toContain('github=connected');
  const id = (await platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [p.slug])).rows[0]!.id;
  return { slug: p.slug, id, repo };
}
const deployOf = async (projectId: string, head: string) =>
  (await platform.db.query<{ id: string }>("SELECT id FROM deploys WHERE project_id = $1 AND trigger_id = $2 AND trigger_kind = 'push'", [projectId, head]))
    .rows[0]!.id;
/** The deploy moved on as the builder moves it. */
const setState = (deployId: string, status: string, failureReason: string | null = null) =>
  platform.db.query(
    `UPDATE deploys SET status = $2, failure_reason = $3, finished_at = CASE WHEN $2 IN ('ready', 'failed', 'canceled') THEN now() END WHERE id = $1`,
    [deployId, status, failureReason],
  );
/** Every link due now (what the sweep's next look, or a backoff's end, would bring), then one sweep. */
async function sweepNow() {
  await platform.db.query("UPDATE github_deploy_links SET next_attempt_at = now() - interval '1 second', lease_until = NULL WHERE next_attempt_at IS NOT NULL");
  await sweeper.sweep();
}
const statusesOf = (head: string) => gh.statuses.filter((s) => s.sha === head);
const commentsOf = (r: StandinRepo, pr: number) => [...gh.comments.values()].filter((c) => c.repo === r.fullName && c.pr === pr);

describe('commit statuses', () => {
  it('a push-triggered preview: pending while it builds, then success with its preview URL; the token reads one repository with statuses and pull_requests write only', async () => {
    const { id, slug, repo } = await boundProject();
    const head = sha('a');
    await deliver('push', push(repo, 'feature-x', head));
    const deployId = await deployOf(id, head);
    await sweepNow();
    expect(statusesOf(head)).toEqual([]); // queued: nothing said yet
    await setState(deployId, 'building');
    await sweepNow();
    await sweepNow(); // unchanged: not sent again
    expect(statusesOf(head)).toEqual([
      expect.objectContaining({ repo: repo.fullName, state: 'pending', description: 'Building preview', context: `cx/deploy/${slug}` }),
    ]);
    await setState(deployId, 'ready');
    await sweepNow();
    const last = statusesOf(head).at(-1)!;
    expect(last).toMatchObject({ state: 'success', description: 'Preview ready' });
    expect(last.target_url).toContain(deployId.replace(/_/g, '-'));
    const minted = gh.minted.filter((m) => (m.permissions as Record<string, string> | undefined)?.statuses);
    expect(minted.length).toBeGreaterThan(0);
    for (const m of minted) {
      expect(m.repositoryIds).toEqual([repo.id]);
      expect(m.permissions).toEqual({ statuses: 'write', pull_requests: 'write' });
    }
    // The deploy page's view of it.
    const res = await app.inject({ url: `/v1/projects/${slug}/deploys/${deployId}`, headers: sessionHeaders(owner.cookie) });
    expect(res.statusCode).toBe(200);
    expect(res.json().github).toEqual({
      repositoryId: repo.id,
      headSha: head,
      pullRequest: null,
      pullRequestUrl: null,
      commitStatus: 'success',
      statusDescription: 'Preview ready',
    });
  });

  it('a failed build: failure, pointing at the deploy in the console', async () => {
    const { id, slug, repo } = await boundProject();
    const head = sha('b');
    await deliver('push', push(repo, 'broken', head));
    const deployId = await deployOf(id, head);
    await setState(deployId, 'failed', 'build_failed');
    await sweepNow();
    expect(statusesOf(head)).toEqual([
      expect.objectContaining({
        state: 'failure',
        description: 'The preview failed (build_failed)',
        target_url: `https://console.example.test/projects/${slug}/deploys/${deployId}`,
      }),
    ]);
  });

  it('a project without a GitHub binding: its deploys make no call to GitHub', async () => {
    const p = await createProject(app, owner.cookie, { defaultBranch: 'main' });
    // A build source of its own (a deploy needs one, issue 42), with no GitHub App connection behind it.
    await platform.db.query('INSERT INTO project_build_settings (project_id, repo_url) VALUES ($1, $2)', [p.id, 'https://github.com/acme/unbound.git']);
    const calls = gh.calls.length;
    const queued = await app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/deploys`,
      headers: sessionHeaders(owner.cookie),
      payload: { branch: 'dev' },
    });
    expect(queued.statusCode).toBe(202);
    await setState(queued.json().deploy.id, 'ready');
    await sweepNow();
    expect(gh.calls.slice(calls).filter((c) => !c.startsWith('POST /app/') && c.includes('/repos/'))).toEqual([]);
    expect((await platform.db.query('SELECT 1 FROM github_deploy_links WHERE deploy_id = $1', [queued.json().deploy.id])).rows).toEqual([]);
  });

  it('GitHub answering 500, or never answering: the deploy is untouched, the failure counted, and the status sent once GitHub is back', async () => {
    const { id, repo } = await boundProject();
    const head = sha('c');
    await deliver('push', push(repo, 'flaky', head));
    const deployId = await deployOf(id, head);
    await setState(deployId, 'ready');
    const failedBefore = sweeper.stats().github_failed ?? 0;
    gh.fault = 500;
    await sweepNow();
    gh.fault = 'hang';
    await sweepNow();
    gh.fault = undefined;
    expect(sweeper.stats().github_failed ?? 0).toBeGreaterThanOrEqual(failedBefore + 2);
    expect((await platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [deployId])).rows[0]!.status).toBe('ready');
    const link = (
      await platform.db.query<{ attempts: number; last_error: string }>('SELECT attempts, last_error FROM github_deploy_links WHERE deploy_id = $1', [deployId])
    ).rows[0]!;
    expect(link.attempts).toBe(2);
    expect(link.last_error).toBeTruthy();
    await sweepNow();
    expect(statusesOf(head)).toEqual([expect.objectContaining({ state: 'success' })]);
  });
});

describe('pull-request comments', () => {
  it('one comment per pull request: created once, then updated (a new push, a restart that forgot its id), never duplicated', async () => {
    const { id, repo, slug } = await boundProject();
    const first = sha('d');
    await deliver('pull_request', pullRequest(repo, 'feature-y', first, 7));
    const d1 = await deployOf(id, first);
    await setState(d1, 'building');
    await sweepNow();
    expect(commentsOf(repo, 7)).toHaveLength(1);
    expect(commentsOf(repo, 7)[0]!.body).toContain(`<!-- cx-preview:${id} -->`);
    expect(commentsOf(repo, 7)[0]!.body).toContain('| Status | Building |');
    await setState(d1, 'ready');
    await sweepNow();
    expect(commentsOf(repo, 7)).toHaveLength(1);
    expect(commentsOf(repo, 7)[0]!.body).toContain('| Status | Ready |');
    expect(commentsOf(repo, 7)[0]!.body).toContain(d1.replace(/_/g, '-'));
    // A restart that lost the comment's id finds it by its marker.
    await platform.db.query('UPDATE github_deploy_links SET comment_id = NULL, comment_hash = NULL WHERE deploy_id = $1', [d1]);
    await sweepNow();
    expect(commentsOf(repo, 7)).toHaveLength(1);
    // The next push to the pull request: the same comment now shows the newer deploy; the older deploy leaves it alone.
    const second = sha('e');
    await deliver('pull_request', pullRequest(repo, 'feature-y', second, 7, 'synchronize'));
    const d2 = await deployOf(id, second);
    await setState(d2, 'ready');
    await sweepNow();
    await sweepNow();
    expect(commentsOf(repo, 7)).toHaveLength(1);
    expect(commentsOf(repo, 7)[0]!.body).toContain(d2);
    expect(commentsOf(repo, 7)[0]!.body).toContain(`**${slug.replace(/-/g, '\\-')}**`);
    const page = await app.inject({ url: `/v1/projects/${slug}/deploys/${d2}`, headers: sessionHeaders(owner.cookie) });
    expect(page.json().github).toMatchObject({ pullRequest: 7, pullRequestUrl: `${gh.url}/${repo.fullName}/pull/7`, commitStatus: 'success' });
  });

  it('a push deployed before its pull request was opened: the pull request found for the commit (or named by its opened delivery) gets the comment', async () => {
    const { id, repo } = await boundProject();
    const head = sha('f');
    gh.pulls.push({ repo: repo.fullName, number: 11, headSha: head });
    await deliver('push', push(repo, 'found', head));
    const d = await deployOf(id, head);
    await setState(d, 'ready');
    await sweepNow();
    expect(commentsOf(repo, 11)).toHaveLength(1);
    // Opened afterwards on the same commit: the push's deploy learns the number; no second deploy is queued.
    const other = sha('9');
    await deliver('push', push(repo, 'later', other));
    const d2 = await deployOf(id, other);
    await setState(d2, 'ready');
    await sweepNow();
    await deliver('pull_request', pullRequest(repo, 'later', other, 12));
    await sweepNow();
    expect(commentsOf(repo, 12)).toHaveLength(1);
    expect((await platform.db.query('SELECT id FROM deploys WHERE project_id = $1 AND trigger_id = $2', [id, other])).rows).toHaveLength(1);
  });

  it("failOnNewErrors: a ready preview's status turns to failure once issues first seen in it appear; the comment lists them, inert", async () => {
    const { id, repo, slug } = await boundProject();
    const patched = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/github/settings`,
      headers: sessionHeaders(owner.cookie),
      payload: { failOnNewErrors: true },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toEqual({ failOnNewErrors: true });
    const head = sha('1');
    await deliver('pull_request', pullRequest(repo, 'risky', head, 21));
    const d = await deployOf(id, head);
    await setState(d, 'ready');
    await sweepNow();
    expect(statusesOf(head).at(-1)).toMatchObject({ state: 'success' });
    // Errors ingested for the preview (through the error pipeline, from its own host, naming it): an issue first seen in it.
    const hostile = 'TypeError](https://evil.example/x) <!-- cx-preview:x -->';
    const events = Array.from({ length: 3 }, () => event({ name: hostile, deployId: d }));
    await platform.bus.publish(TOPICS.errorEvents, [
      { key: id, value: encodeErrorBatchV1(batch(id, events, { originHost: `${d.replace(/_/g, '-')}.${platform.config.SITES_DOMAIN}` })) },
    ]);
    await processed(platform);
    const ingested = (await platform.db.query<{ id: string; env_counts: unknown }>('SELECT id, env_counts FROM error_groups WHERE first_deploy_id = $1', [d]))
      .rows;
    expect(ingested).toHaveLength(1);
    // An issue of this deploy also seen in production is not "only on this preview".
    await platform.db.query(
      `INSERT INTO error_groups (id, project_id, fingerprint, name, message, count, env_counts, first_seen, last_seen, first_deploy_id)
       VALUES ($1, $2, $1, 'Known', 'boom', 1, '{"preview": 1, "production": 5}', now(), now(), $3)`,
      [`grp_${suffix}_known`, id, d],
    );
    await sweepNow();
    expect(statusesOf(head).at(-1)).toMatchObject({ state: 'failure', description: 'Preview ready, but it introduced 1 new error' });
    const body = commentsOf(repo, 21)[0]!.body;
    expect(body).toContain('Issues seen only on this preview: 1');
    expect(body).toContain(`/projects/${slug}/errors/${ingested[0]!.id}`);
    expect(body).not.toContain('Known');
    expect(body).not.toContain('](https://evil');
    expect(body.match(/<!--/g)).toHaveLength(1);
  });

  it("the setting is the project owner's: another user, or a bad body, is refused", async () => {
    const { slug } = await boundProject();
    const mallory = await signUpAndSignIn(app, platform);
    const other = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/github/settings`,
      headers: sessionHeaders(mallory.cookie),
      payload: { failOnNewErrors: true },
    });
    expect(other.statusCode).toBe(404);
    const bad = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/github/settings`,
      headers: sessionHeaders(owner.cookie),
      payload: { failOnNewErrors: 'yes' },
    });
    expect(bad.statusCode).toBe(400);
    const read = await app.inject({ url: `/v1/projects/${slug}/github/settings`, headers: sessionHeaders(owner.cookie) });
    expect(read.json()).toEqual({ failOnNewErrors: false });
  });
});
