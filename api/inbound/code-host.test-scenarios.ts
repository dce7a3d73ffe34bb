import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startGithubStandin, type GithubStandin, type StandinRepo } from '../../test/support/github-standin.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';

/**
 * `POST /v1/webhooks/code_host` and `/v1/integrations/github` (issues 25, 38), through HTTP, signed by GitHub's own
 * library (@octokit/webhooks-methods). A repository is connected only through the GitHub App: the user's code from
 * GitHub's authorize page, exchanged and checked against `/user/installations` on a GitHub stand-in on loopback
 * (test/support/github-standin.ts, the test-only allowance the webhook tests use). A push to a connected repository
 * (by repository and installation id) queues a deploy, as a deploy hook would. No builder runs here: the deploys stay
 * queued on a topic of this file's own. The attacker's tests are the rows of issue 38 (2 and 6).
 */
const OLD_SECRET = 'github-secret-old-0001';
const NEW_SECRET = 'github-secret-new-0002';

export function defineCodeHostScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let api: Awaited<ReturnType<typeof buildTestApi>>;
    let app: FastifyInstance;
    let platform: Platform;
    let owner: SignedInUser;
    let mallory: SignedInUser;
    let consumer: PipelineConsumer<string>;
    let gh: GithubStandin;
    const suffix = randomUUID().slice(0, 8);
    // GitHub's ids are global: each run takes its own range, so runs sharing a database never meet.
    let nextId = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
    const ACME = `acme-${suffix}`;
    const acme = { id: 0, account: ACME, repos: [] as StandinRepo[] };
    const malloryInstallation = { id: 0, account: `mallory-${suffix}`, repos: [] as StandinRepo[] };
    /** A repository on GitHub in the acme installation (the owner's GitHub user `alice` reaches it). */
    const repo = (name: string, inst = acme): StandinRepo => {
      const r = { id: nextId++, fullName: `${inst.account}/${name}`, private: true };
      inst.repos.push(r);
      return r;
    };

    beforeAll(async () => {
      gh = await startGithubStandin();
      acme.id = nextId++;
      malloryInstallation.id = nextId++;
      gh.installations.set(acme.id, acme);
      gh.installations.set(malloryInstallation.id, malloryInstallation);
      gh.access.set('alice', new Set([acme.id]));
      gh.access.set('mallory', new Set([malloryInstallation.id]));
      // github.com resolves to a public address without a lookup: the guard is checked, nothing is dialled.
      const outbound = steerableGuard({ unknownNames: 'fail', ca: gh.cert });
      outbound.table['github.com'] = ['140.82.112.3'];
      api = await buildTestApi({
        ...opts,
        env: {
          ...opts.env,
          GITHUB_WEBHOOK_SECRETS: `${OLD_SECRET},${NEW_SECRET}`,
          ...gh.env,
          GITHUB_APP_SLUG: 'service-test',
          // Bus names of this run's own: runs sharing one Kafka cluster never take each other's deliveries.
          BUS_NAME_SUFFIX: `.code-host-${suffix}`,
        },
        overrides: { ...opts.overrides, outbound: outbound.guard },
      });
      app = api.app;
      platform = api.platform;
      owner = await signUpAndSignIn(app, platform);
      mallory = await signUpAndSignIn(app, platform);
      consumer = await startInboundConsumer(platform);
      // A builder's stand-in takes the wake-ups (the in-process bus hands a message over before publish resolves).
      await platform.bus.subscribe(TOPICS.deployRequests, 'builder-standin', async () => {});
    });
    afterAll(async () => {
      await consumer?.stop();
      await api?.close();
      await gh?.close();
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
    /** A push as the GitHub App delivers it: the repository's id and name, the installation it came through. */
    const push = (r: StandinRepo, branch: string, extra: Record<string, unknown> = {}, inst = acme) => ({
      ref: `refs/heads/${branch}`,
      after: 'a'.repeat(40),
      deleted: false,
      repository: { id: r.id, full_name: r.fullName },
      installation: { id: inst.id },
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
    /** Start connecting: POST, and the state GitHub's authorize link carries. */
    const start = async (user: SignedInUser, slug: string, repository: string) => {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/integrations/github',
        headers: sessionHeaders(user.cookie),
        payload: { project: slug, repository },
      });
      const state = res.statusCode === 202 ? new URL(res.json().authorizeUrl).searchParams.get('state')! : '';
      return { res, state };
    };
    /** GitHub sending the user's browser back (a cross-site navigation carrying the session cookie). */
    const callback = (user: SignedInUser, query: Record<string, string>) =>
      app.inject({ url: `/v1/integrations/github/callback?${new URLSearchParams(query)}`, headers: { cookie: user.cookie, 'sec-fetch-site': 'cross-site' } });
    /** The whole flow as `login` on GitHub: the outcome the console page is sent. */
    const connect = async (slug: string, repository: string, o: { user?: SignedInUser; login?: string } = {}) => {
      const user = o.user ?? owner;
      const { res, state } = await start(user, slug, repository);
      expect(res.statusCode).toBe(202);
      const back = await callback(user, { code: gh.codeFor(o.login ?? 'alice'), state });
      expect(back.statusCode).toBe(303);
      return new URL(back.headers.location as string, 'http://x').searchParams.get('github');
    };
    const projectId = async (slug: string) => (await platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;
    const connections = async (user: SignedInUser, slug: string) =>
      (await app.inject({ url: '/v1/integrations/github', headers: sessionHeaders(user.cookie) }))
        .json()
        .connections.filter((c: { project: string }) => c.project === slug);
    /** Deliveries the consumer has handled so far (acted on, skipped as duplicates, or dropped). */
    const handled = () => {
      const s = consumer.stats();
      return s.accepted + s.duplicates + Object.values(s.dropped).reduce((sum: number, x) => sum + (x ?? 0), 0);
    };
    /** Wait until `n` more deliveries than `from` were handled (on Kafka the consumer takes them a moment after the 200). */
    const settle = async (from: number, n: number) => vi.waitFor(() => expect(handled()).toBeGreaterThanOrEqual(from + n), { timeout: 30_000, interval: 50 });

    it('refuses a delivery without a signature, with a wrong one, or signed with an unknown secret: 401 invalid_signature, counted by reason', async () => {
      const r = repo('unsigned');
      const none = await deliver('push', push(r, 'main'), { signature: null });
      expect(none.statusCode).toBe(401);
      expect(none.json().error).toBe('invalid_signature');
      expect((await deliver('push', push(r, 'main'), { signature: `sha256=${'0'.repeat(64)}` })).statusCode).toBe(401);
      expect((await deliver('push', push(r, 'main'), { secret: 'not-the-secret-at-all' })).statusCode).toBe(401);
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

    it("connects a repository through the GitHub App (the user's GitHub account reaches it through an installation), and a push to its default branch queues a production deploy of that commit", async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('site');
      const { res, state } = await start(owner, p.slug, r.fullName);
      expect(res.json()).toMatchObject({ installUrl: expect.stringContaining('/apps/service-test/installations/new?state=') });
      expect(new URL(res.json().authorizeUrl).searchParams.get('client_id')).toBe(gh.clientId);
      // Nothing is bound before GitHub's word.
      expect(await connections(owner, p.slug)).toEqual([]);
      const back = await callback(owner, { code: gh.codeFor('alice'), state });
      expect(back.statusCode).toBe(303);
      expect(back.headers.location).toBe(`/projects/${p.slug}/integrations?github=connected`);
      expect(await connections(owner, p.slug)).toEqual([
        expect.objectContaining({
          repository: r.fullName,
          repositoryId: r.id,
          installationId: acme.id,
          status: 'active',
          cloneUrl: `${gh.url}/${r.fullName}.git`,
        }),
      ]);
      // The same repository again: nothing new. An unknown project: 404. A typed clone URL is no longer taken.
      expect(await connect(p.slug, r.fullName)).toBe('already_connected');
      expect((await start(owner, 'no-such-project', r.fullName)).res.statusCode).toBe(404);
      const typed = await app.inject({
        method: 'POST',
        url: '/v1/integrations/github',
        headers: sessionHeaders(owner.cookie),
        payload: { project: p.slug, repository: r.fullName, cloneUrl: 'https://github.com/x/y.git' },
      });
      expect(typed.statusCode).toBe(400);
      expect(typed.json().error).toBe('invalid_request');

      const id = randomUUID();
      const from = handled();
      const delivered = await deliver('push', push(r, 'main', { after: 'b'.repeat(40) }), { id });
      expect(delivered.statusCode).toBe(200);
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([
        { branch: 'main', environment: 'production', trigger_kind: 'push', trigger_id: 'b'.repeat(40) },
      ]);
      // A replay of the same delivery id answers 200 and changes nothing.
      const replay = await deliver('push', push(r, 'main', { after: 'b'.repeat(40) }), { id });
      expect(replay.json()).toEqual({ received: true, duplicate: true });
      expect(await deploysOf(await projectId(p.slug))).toHaveLength(1);
    });

    it('queues previews for other branches and same-repository pull requests; nothing for deletions, tags, skips or forks; form bodies too', async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('app');
      const fork = repo('app-fork', malloryInstallation);
      expect(await connect(p.slug, r.fullName)).toBe('connected');
      const id = await projectId(p.slug);
      const pr = (action: string, ref: string, sha: string, headRepo: StandinRepo) => ({
        action,
        repository: { id: r.id, full_name: r.fullName },
        installation: { id: acme.id },
        pull_request: { head: { ref, sha, repo: { id: headRepo.id, full_name: headRepo.fullName } } },
      });

      const from = handled();
      await deliver('push', push(r, 'feature/login'), { form: true });
      await deliver('push', push(r, 'gone', { deleted: true, after: '0'.repeat(40) }));
      await deliver('push', { ...push(r, 'x'), ref: 'refs/tags/v1.0.0' });
      await deliver('push', push(r, 'docs', { head_commit: { message: 'typo [skip ci]' } }));
      await deliver('push', push(r, 'wip', { head_commit: { message: 'not yet [skip deploy]' } }));
      await deliver('pull_request', pr('opened', 'pr-branch', 'c'.repeat(40), r));
      await deliver('pull_request', pr('opened', 'from-fork', 'd'.repeat(40), fork));
      await deliver('pull_request', pr('closed', 'pr-branch', 'c'.repeat(40), r));
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
      const r = repo('shared');
      expect(await connect(a.slug, r.fullName)).toBe('connected');
      expect(await connect(b.slug, r.fullName.toUpperCase())).toBe('connected');
      const from = handled();
      await deliver('push', push(r, 'main'));
      await deliver('push', push(repo('unknown'), 'main'));
      await settle(from, 2);
      expect(await deploysOf(await projectId(a.slug))).toHaveLength(1);
      expect(await deploysOf(await projectId(b.slug))).toHaveLength(1);
    });

    it('a member disconnects a repository: its pushes queue nothing from then on', async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('leaving');
      expect(await connect(p.slug, r.fullName)).toBe('connected');
      const [connection] = await connections(owner, p.slug);
      expect((await app.inject({ method: 'DELETE', url: `/v1/integrations/github/${connection.id}`, headers: sessionHeaders(owner.cookie) })).statusCode).toBe(
        204,
      );
      const from = handled();
      await deliver('push', push(r, 'main'));
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);
    });

    it("issue 38 row 2: a stranger connecting the victim's repository by name binds nothing; the victim's push deploys only the victim's project", async () => {
      const victim = await createProject(app, owner.cookie);
      const theirs = await createProject(app, mallory.cookie);
      const r = repo('private-site');
      expect(await connect(victim.slug, r.fullName)).toBe('connected');
      // Mallory names the victim's repository; her GitHub account reaches no installation that holds it.
      expect(await connect(theirs.slug, r.fullName, { user: mallory, login: 'mallory' })).toBe('not_installed');
      expect(await connections(mallory, theirs.slug)).toEqual([]);
      const from = handled();
      await deliver('push', push(r, 'secret-branch', { after: 'e'.repeat(40) }));
      await settle(from, 1);
      expect(await deploysOf(await projectId(victim.slug))).toEqual([expect.objectContaining({ branch: 'secret-branch', trigger_id: 'e'.repeat(40) })]);
      expect(await deploysOf(await projectId(theirs.slug))).toEqual([]);
    });

    it("issue 38 row 2: a re-created repository of the same name (another id, another installation) deploys nothing into the old owner's project", async () => {
      const p = await createProject(app, owner.cookie);
      const old = repo('renamed-away');
      expect(await connect(p.slug, old.fullName)).toBe('connected');
      // The name is freed and taken again: same owner/name, a new repository id, through someone else's installation.
      const recreated = { id: nextId++, fullName: old.fullName, private: false };
      const from = handled();
      await deliver('push', push(recreated, 'main', {}, malloryInstallation));
      // The old repository's id through another installation (a transfer to another account) is not the binding either.
      await deliver('push', push(old, 'main', {}, malloryInstallation));
      await settle(from, 2);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);
    });

    it('issue 38 row 6: a signed push replayed under a new X-GitHub-Delivery queues nothing more; a new commit still deploys', async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('replayed');
      expect(await connect(p.slug, r.fullName)).toBe('connected');
      const id = await projectId(p.slug);
      const body = push(r, 'main', { after: 'f'.repeat(40) });
      let from = handled();
      await deliver('push', body);
      await settle(from, 1);
      expect(await deploysOf(id)).toHaveLength(1);
      // The build ends, so the production slot is free again: only the push's own identity can stop a replay.
      await platform.db.query(`UPDATE deploys SET status = 'failed' WHERE project_id = $1`, [id]);
      const dropped = consumer.stats().dropped.duplicate_push ?? 0;
      from = handled();
      for (let i = 0; i < 3; i++) expect((await deliver('push', body)).json()).toEqual({ received: true, duplicate: false });
      // The same commit as a pull request's head (GitHub sends both for a push to a PR's branch) is the same push too.
      await deliver('pull_request', {
        action: 'synchronize',
        repository: { id: r.id, full_name: r.fullName },
        installation: { id: acme.id },
        pull_request: { head: { ref: 'main', sha: 'f'.repeat(40), repo: { id: r.id } } },
      });
      await settle(from, 4);
      expect(await deploysOf(id)).toHaveLength(1);
      expect(consumer.stats().dropped.duplicate_push).toBe(dropped + 4);
      from = handled();
      await deliver('push', push(r, 'main', { after: '1'.repeat(40) }));
      await settle(from, 1);
      expect((await deploysOf(id)).map((d) => d.trigger_id)).toEqual(['f'.repeat(40), '1'.repeat(40)]);
    });

    it("installation events unbind: a repository removed from the app's installation, then the app uninstalled", async () => {
      const p = await createProject(app, owner.cookie);
      const other = await createProject(app, owner.cookie);
      const inst = { id: nextId++, account: `uninstalling-${suffix}`, repos: [] as StandinRepo[] };
      gh.installations.set(inst.id, inst);
      gh.access.get('alice')!.add(inst.id);
      const kept = repo('kept', inst);
      const removed = repo('removed', inst);
      expect(await connect(p.slug, kept.fullName)).toBe('connected');
      expect(await connect(p.slug, removed.fullName)).toBe('connected');
      const elsewhere = repo('elsewhere');
      expect(await connect(other.slug, elsewhere.fullName)).toBe('connected');

      let from = handled();
      await deliver('installation_repositories', {
        action: 'removed',
        installation: { id: inst.id, account: { login: inst.account } },
        repositories_removed: [{ id: removed.id, full_name: removed.fullName }],
      });
      await settle(from, 1);
      expect((await connections(owner, p.slug)).map((c: { repositoryId: number }) => c.repositoryId)).toEqual([kept.id]);
      from = handled();
      await deliver('push', push(removed, 'main', {}, inst));
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);

      // The uninstall is handled before the push is sent: on Kafka the two may sit in different partitions, and a push
      // GitHub sent before the uninstall may rightly deploy.
      from = handled();
      await deliver('installation', { action: 'deleted', installation: { id: inst.id, account: { login: inst.account } } });
      await settle(from, 1);
      from = handled();
      await deliver('push', push(kept, 'main', {}, inst));
      await settle(from, 1);
      expect(await connections(owner, p.slug)).toEqual([]);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);
      // Another installation's connection stays.
      expect(await connections(owner, other.slug)).toHaveLength(1);
    });

    it('the callback binds only for the user who started, once, while the link lasts; a refusal on GitHub binds nothing', async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('guarded');
      const { state } = await start(owner, p.slug, r.fullName);
      // Someone else's browser brought back to the owner's link (a link sent to a victim): refused, the link still good.
      const stranger = await callback(mallory, { code: gh.codeFor('mallory'), state });
      expect(stranger.statusCode).toBe(403);
      expect(stranger.json().error).toBe('forbidden');
      expect((await app.inject({ url: `/v1/integrations/github/callback?state=${state}&code=x` })).statusCode).toBe(401);
      // GitHub refused the user's code, or the user cancelled: nothing bound, and the link is used up.
      expect((await callback(owner, { code: 'not-a-code', state })).headers.location).toBe(`/projects/${p.slug}/integrations?github=code_refused`);
      const reused = await callback(owner, { code: gh.codeFor('alice'), state });
      expect(reused.statusCode).toBe(400);
      expect(reused.json().error).toBe('invalid_request');
      const cancelled = await start(owner, p.slug, r.fullName);
      // GitHub's error redirect carries parameters of its own beside error and state: they pass through unread.
      const refusal = { error: 'access_denied', error_description: 'The user has denied your application access.', error_uri: 'https://docs.github.com/x' };
      expect((await callback(owner, { ...refusal, state: cancelled.state })).headers.location).toContain('github=cancelled');
      expect((await callback(owner, { code: gh.codeFor('alice'), state: 'made-up' })).statusCode).toBe(400);
      expect(await connections(owner, p.slug)).toEqual([]);
    });

    it('a connection made by name before issue 38 is listed as needing a reconnect and deploys nothing; connecting again through the app replaces it', async () => {
      const p = await createProject(app, owner.cookie);
      const r = repo('legacy');
      await platform.db.query(`INSERT INTO github_connections (id, project_id, repo_full_name, clone_url, created_at) VALUES ($1, $2, $3, $4, now())`, [
        `ghc_legacy${suffix}`,
        await projectId(p.slug),
        r.fullName,
        `https://github.com/${r.fullName}.git`,
      ]);
      expect(await connections(owner, p.slug)).toEqual([expect.objectContaining({ repository: r.fullName, status: 'needs_reconnecting', repositoryId: null })]);
      let from = handled();
      await deliver('push', push(r, 'main'));
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toEqual([]);
      expect(await connect(p.slug, r.fullName)).toBe('connected');
      expect(await connections(owner, p.slug)).toEqual([expect.objectContaining({ status: 'active', repositoryId: r.id })]);
      from = handled();
      await deliver('push', push(r, 'main'));
      await settle(from, 1);
      expect(await deploysOf(await projectId(p.slug))).toHaveLength(1);
    });
  });
}
