import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';

/**
 * `POST /v1/webhooks/code_host` and `/v1/integrations/github` (issue 25), through HTTP, signed by GitHub's own library
 * (@octokit/webhooks-methods). A push to a connected repository queues a deploy, as a deploy hook would. No builder runs
 * here (a build would clone from github.com): the deploys stay queued on a topic of this file's own.
 */
const OLD_SECRET = 'github-secret-old-0001';
const NEW_SECRET = 'github-secret-new-0002';

export function defineCodeHostScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let api: Awaited<ReturnType<typeof buildTestApi>>;
    let app: FastifyInstance;
    let platform: Platform;
    let owner: SignedInUser;
    let consumer: PipelineConsumer<string>;
    const suffix = randomUUID().slice(0, 8);
    const deployTopic = `code-host-deploys-${suffix}`;

    beforeAll(async () => {
      // github.com resolves to a public address without a lookup: the guard is checked, nothing is dialled.
      const outbound = steerableGuard({ unknownNames: 'fail' });
      outbound.table['github.com'] = ['140.82.112.3'];
      api = await buildTestApi({
        ...opts,
        env: { ...opts.env, GITHUB_WEBHOOK_SECRETS: `${OLD_SECRET},${NEW_SECRET}` },
        overrides: { ...opts.overrides, outbound: outbound.guard },
        topics: { deploy: deployTopic, inbound: `inbound-${suffix}` },
      });
      app = api.app;
      platform = api.platform;
      owner = await signUpAndSignIn(app, platform);
      consumer = await startInboundConsumer(platform, { topic: `inbound-${suffix}`, consumerGroup: `inbound-${suffix}`, deployTopic });
      // A builder's stand-in takes the wake-ups (the in-process bus hands a message over before publish resolves).
      await platform.bus.subscribe(deployTopic, `builder-standin-${suffix}`, async () => {});
    });
    afterAll(async () => {
      await consumer?.stop();
      await api?.close();
    });

    const deliver = async (event: string, payload: unknown, o: { secret?: string; id?: string; form?: boolean; signature?: string | null } = {}) => {
      const json = JSON.stringify(payload);
      const body = o.form ? `payload=${encodeURIComponent(json)}` : json;
      const signature = o.signature === undefined ? await sign(o.secret ?? NEW_SECRET, body) : o.signature;
      const headers: Record<string, string> = {
        'content-type': o.form ? 'application/x-www-form-urlencoded' : 'application/json',
        'x-github-event': event,
        'x-github-delivery': o.id ?? randomUUID(),
      };
      if (signature !== null) headers['x-hub-signature-256'] = signature;
      return app.inject({ method: 'POST', url: '/v1/webhooks/code_host', headers, payload: body });
    };
    const push = (repo: string, branch: string, extra: Record<string, unknown> = {}) => ({
      ref: `refs/heads/${branch}`,
      after: 'a'.repeat(40),
      deleted: false,
      repository: { full_name: repo },
      head_commit: { id: 'a'.repeat(40), message: 'a change' },
      ...extra,
    });
    const deploysOf = async (projectId: string) =>
      (
        await platform.db.query<{ branch: string; environment: string; trigger_kind: string; trigger_id: string | null }>(
          'SELECT branch, environment, trigger_kind, trigger_id FROM deploys WHERE project_id = $1 ORDER BY created_at, id',
          [projectId],
        )
      ).rows;
    const connect = async (slug: string, repository: string) =>
      app.inject({ method: 'POST', url: '/v1/integrations/github', headers: sessionHeaders(owner.cookie), payload: { project: slug, repository } });
    const projectId = async (slug: string) => (await platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;
    /** Deliveries the consumer has handled so far (acted on, skipped as duplicates, or dropped). */
    const handled = () => {
      const s = consumer.stats();
      return s.accepted + s.duplicates + Object.values(s.dropped).reduce((sum: number, x) => sum + (x ?? 0), 0);
    };
    /** Wait until `n` more deliveries than `from` were handled (on Kafka the consumer takes them a moment after the 200). */
    const settle = async (from: number, n: number) => vi.waitFor(() => expect(handled()).toBeGreaterThanOrEqual(from + n), { timeout: 30_000, interval: 50 });

    it('refuses a delivery without a signature, with a wrong one, or signed with an unknown secret: 401 invalid_signature, counted by reason', async () => {
      const none = await deliver('push', push('acme/site', 'main'), { signature: null });
      expect(none.statusCode).toBe(401);
      expect(none.json().error).toBe('invalid_signature');
      expect((await deliver('push', push('acme/site', 'main'), { signature: `sha256=${'0'.repeat(64)}` })).statusCode).toBe(401);
      expect((await deliver('push', push('acme/site', 'main'), { secret: 'not-the-secret-at-all' })).statusCode).toBe(401);
      const health = (await app.inject({ url: '/v1/webhooks/health' })).json().providers.github;
      expect(health.configured).toBe(true);
      expect(health.refused.missing_signature).toBeGreaterThanOrEqual(1);
      expect(health.refused.bad_signature).toBeGreaterThanOrEqual(2);
    });

    it('answers ping, and takes both secrets while one is rotated', async () => {
      const ping = await deliver('ping', { zen: 'Keep it logically awesome.', hook_id: 1 }, { secret: OLD_SECRET });
      expect(ping.statusCode).toBe(200);
      expect(ping.json()).toEqual({ received: true, duplicate: false });
    });

    it('connects a repository to a project (member only, once), and a push to its default branch queues a production deploy of that commit', async () => {
      const p = await createProject(app, owner.cookie);
      const repo = `acme/site-${suffix}`;
      const made = await connect(p.slug, repo);
      expect(made.statusCode).toBe(201);
      expect(made.json().connection).toMatchObject({ project: p.slug, repository: repo, cloneUrl: `https://github.com/${repo}.git` });
      expect((await connect(p.slug, repo)).statusCode).toBe(409);
      expect((await connect('no-such-project', repo)).statusCode).toBe(404);
      const listed = (await app.inject({ url: '/v1/integrations/github', headers: sessionHeaders(owner.cookie) })).json().connections;
      expect(listed.map((c: { repository: string }) => c.repository)).toContain(repo);

      const id = randomUUID();
      const from = handled();
      const res = await deliver('push', push(repo, 'main', { after: 'b'.repeat(40) }), { id });
      expect(res.statusCode).toBe(200);
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([
        { branch: 'main', environment: 'production', trigger_kind: 'push', trigger_id: 'b'.repeat(40) },
      ]);

      // A replay of the same delivery id answers 200 and changes nothing.
      const replay = await deliver('push', push(repo, 'main', { after: 'b'.repeat(40) }), { id });
      expect(replay.json()).toEqual({ received: true, duplicate: true });
      expect(await deploysOf(await projectId(p.slug))).toHaveLength(1);
    });

    it('queues previews for other branches and same-repository pull requests; nothing for deletions, tags, skips or forks; form bodies too', async () => {
      const p = await createProject(app, owner.cookie);
      const repo = `acme/app-${suffix}`;
      expect((await connect(p.slug, repo)).statusCode).toBe(201);
      const id = await projectId(p.slug);

      const from = handled();
      await deliver('push', push(repo, 'feature/login'), { form: true });
      await deliver('push', push(repo, 'gone', { deleted: true, after: '0'.repeat(40) }));
      await deliver('push', { ...push(repo, 'x'), ref: 'refs/tags/v1.0.0' });
      await deliver('push', push(repo, 'docs', { head_commit: { message: 'typo [skip ci]' } }));
      await deliver('push', push(repo, 'wip', { head_commit: { message: 'not yet [skip deploy]' } }));
      await deliver('pull_request', {
        action: 'opened',
        repository: { full_name: repo },
        pull_request: { head: { ref: 'pr-branch', sha: 'c'.repeat(40), repo: { full_name: repo } } },
      });
      await deliver('pull_request', {
        action: 'opened',
        repository: { full_name: repo },
        pull_request: { head: { ref: 'from-fork', sha: 'd'.repeat(40), repo: { full_name: 'mallory/app' } } },
      });
      await deliver('pull_request', {
        action: 'closed',
        repository: { full_name: repo },
        pull_request: { head: { ref: 'pr-branch', repo: { full_name: repo } } },
      });
      await settle(from, 8);
      // Deliveries are keyed apart, so on Kafka they may be handled in any order.
      expect((await deploysOf(id)).map((d) => [d.branch, d.environment]).sort()).toEqual([
        ['feature/login', 'preview'],
        ['pr-branch', 'preview'],
      ]);
    });

    it('a repository connected to two projects deploys both; a push of an unconnected repository queues nothing', async () => {
      const a = await createProject(app, owner.cookie);
      const b = await createProject(app, owner.cookie);
      const repo = `acme/shared-${suffix}`;
      await connect(a.slug, repo);
      await connect(b.slug, repo);
      const from = handled();
      await deliver('push', push(repo.toUpperCase(), 'main'));
      await deliver('push', push(`acme/unknown-${suffix}`, 'main'));
      await settle(from, 2);
      expect(await deploysOf(await projectId(a.slug))).toHaveLength(1);
      expect(await deploysOf(await projectId(b.slug))).toHaveLength(1);
    });

    it('a member disconnects a repository: its pushes queue nothing from then on', async () => {
      const p = await createProject(app, owner.cookie);
      const repo = `acme/leaving-${suffix}`;
      const { connection } = (await connect(p.slug, repo)).json();
      expect((await app.inject({ method: 'DELETE', url: `/v1/integrations/github/${connection.id}`, headers: sessionHeaders(owner.cookie) })).statusCode).toBe(
        204,
      );
      const from = handled();
      await deliver('push', push(repo, 'main'));
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);
    });
  });
}
