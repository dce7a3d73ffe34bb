import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Platform } from '../platform/platform.ts';
import { ProjectEventSchema, type ProjectEvent } from '../schemas/project-events.ts';
import { TOPICS } from '../schemas/topics.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../test/support/https-receiver.ts';
import { verifyWebhook } from '../sdk/node/webhook-verifier.ts';
import { createErrorPipeline } from '../processor/errors/error-pipeline.ts';
import { stampErrorEvent } from '../schemas/error-event.ts';
import { LIMITS } from '../schemas/limits.ts';
import { createBuildLog } from './build-log.ts';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { injectForwarder } from '../ingest/forward.ts';
import { request as httpRequest } from 'node:http';

/**
 * Deploys through the whole path: a real git repository made here, the API (build settings, hooks, the hook
 * call), the builder (checkout, build command, artifact, build log), the deploy events and their webhooks, and
 * the sites. Run by deploys.test.ts (embedded: PGlite, chDB) and deploys.int.test.ts (Postgres, ClickHouse over
 * HTTP); the Kafka hand-off and builders in processes of their own are test/e2e/deploys.e2e.test.ts.
 */
import type { TestPlatformOptions } from '../test/support/platform.ts';
import { steerableGuard, type SteerableGuard } from '../test/support/outbound-guard.ts';

export function defineDeployScenarios(backends: { real?: TestPlatformOptions['real'] } = {}): void {
  const SECRET = 'sup3r-s3cret-build-value';
  let api: Awaited<ReturnType<typeof buildTestApi>>;
  let app: FastifyInstance;
  let platform: Platform;
  let owner: SignedInUser;
  let receiver: HttpsReceiver;
  let outbound: SteerableGuard;
  let repo: string;
  const events: ProjectEvent[] = [];

  function git(cwd: string, ...args: string[]) {
    return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
  }

  /** A repository with one branch per behaviour; each branch's build.sh is what its build runs. */
  function makeRepo(): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'deploy-repo-'));
    git(dir, 'init', '-q', '-b', 'main');
    const commit = (branch: string, script: string, from = 'main') => {
      if (branch !== 'main') git(dir, 'checkout', '-q', '-B', branch, from);
      writeFileSync(path.join(dir, 'build.sh'), script);
      git(dir, 'add', '.');
      git(dir, 'commit', '-q', '-m', `${branch} build`);
      git(dir, 'checkout', '-q', 'main');
    };
    commit(
      'main',
      [
        'mkdir -p out/assets',
        'echo "<h1>production $SERVICE_GIT_SHA</h1>" > out/index.html',
        'echo "body{}" > out/assets/app.3f9a2c1b.css',
        'echo "deploying $SERVICE_DEPLOY_ID to $SERVICE_ENVIRONMENT"',
        'echo "the token is $API_TOKEN"',
        'echo "database: ${DATABASE_URL:-not set}"',
        'echo "to stderr" >&2',
      ].join('\n'),
    );
    commit('feature', 'mkdir -p out && echo "<h1>preview</h1>" > out/index.html && echo built preview');
    commit('broken', 'echo about to fail; exit 3');
    commit('slow', 'echo sleeping; sleep 30; mkdir -p out');
    return dir;
  }

  beforeAll(async () => {
    repo = makeRepo();
    receiver = await startHttpsReceiver();
    outbound = steerableGuard({ ca: receiver.cert });
    // processors: the error pipeline, the webhook dispatcher and a builder, as in the single process.
    api = await buildTestApi({
      real: backends.real,
      processors: true,
      env: { ALLOW_LOCAL_REPOS: 'true', BUILD_TIMEOUT_MS: '8000', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'deploy-data-')) },
      overrides: { outbound: outbound.guard },
    });
    app = api.app;
    platform = api.platform;
    await platform.bus.subscribe(TOPICS.projectEvents, 'test-deploy-events', async (messages) => {
      for (const m of messages) events.push(ProjectEventSchema.parse(JSON.parse(m.value.toString())));
    });
    owner = await signUpAndSignIn(app, platform);
  });

  afterAll(async () => {
    await api?.close();
    await receiver?.close();
  });

  const asOwner = () => sessionHeaders(owner.cookie);

  async function projectWithSource() {
    const p = await createProject(app, owner.cookie, { defaultBranch: 'main' });
    const res = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${p.slug}/deploys/settings`,
      headers: asOwner(),
      payload: {
        repoUrl: repo,
        buildCommand: 'sh build.sh',
        outputDir: 'out',
        env: { API_TOKEN: { value: SECRET, secret: true }, PLAIN: { value: 'visible' } },
      },
    });
    expect(res.statusCode).toBe(200);
    return p;
  }

  async function createHook(slug: string, branch: string) {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/deploys/hooks`,
      headers: asOwner(),
      payload: { name: `${branch} hook`, branch },
    });
    expect(res.statusCode).toBe(201);
    return res.json().hook as { id: string; token: string; url: string; hint: string };
  }

  const callHook = (token: string, body = '{}', headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: `/v1/hooks/${token}`, headers: { 'content-type': 'application/json', ...headers }, payload: body });

  async function deployOf(slug: string, id: string) {
    return (await app.inject({ url: `/v1/projects/${slug}/deploys/${id}`, headers: asOwner() })).json().deploy;
  }

  async function finished(slug: string, id: string) {
    await vi.waitFor(async () => expect(['ready', 'failed', 'canceled']).toContain((await deployOf(slug, id)).status), { timeout: 20_000, interval: 50 });
    return deployOf(slug, id);
  }

  async function logLines(deployId: string): Promise<string[]> {
    const rows = await platform.analytics.query<{ line: string }>('SELECT line FROM deploy_logs FINAL WHERE deploy_id = {d:String} ORDER BY seq', {
      d: deployId,
    });
    return rows.map((r) => r.line);
  }

  describe('deploys through a hook', () => {
    it('builds the default branch as production: sha recorded, output kept, every line logged with the secret masked, deploy.succeeded out', async () => {
      const p = await projectWithSource();
      const hook = await createHook(p.slug, 'main');
      expect(hook.token).toMatch(/^cxhook_/);
      expect(hook.url).toMatch(new RegExp(`/v1/hooks/${hook.token}$`));
      const res = await callHook(hook.token);
      expect(res.statusCode).toBe(202);
      const { deployId } = res.json();
      const d = await finished(p.slug, deployId);
      expect(d).toMatchObject({
        status: 'ready',
        environment: 'production',
        branch: 'main',
        gitSha: git(repo, 'rev-parse', 'main'),
        trigger: { kind: 'hook', id: hook.id },
        failureReason: null,
      });

      const artifact = path.join(platform.config.DATA_DIR, 'artifacts', deployId);
      expect(readFileSync(path.join(artifact, 'index.html'), 'utf8')).toContain(`production ${d.gitSha}`);

      await vi.waitFor(async () => expect(await logLines(deployId)).toContain('to stderr'), { timeout: 10_000 });
      const lines = await logLines(deployId);
      expect(lines).toContain(`deploying ${deployId} to production`);
      expect(lines).toContain('the token is ***');
      // The build never sees the service's own configuration.
      expect(lines).toContain('database: not set');
      expect(lines.join('\n')).not.toContain(SECRET);

      await vi.waitFor(() => expect(events.find((e) => e.data.deployId === deployId)).toBeDefined());
      expect(events.find((e) => e.data.deployId === deployId)).toMatchObject({
        event: 'deploy.succeeded',
        projectId: expect.any(String),
        data: { branch: 'main', gitSha: d.gitSha, environment: 'production', reason: null },
      });
    });

    it('fails a build that exits non-zero with build_failed and its exit code, and one past the time limit with timeout', async () => {
      const p = await projectWithSource();
      const broken = await finished(p.slug, (await callHook((await createHook(p.slug, 'broken')).token)).json().deployId);
      expect(broken).toMatchObject({ status: 'failed', environment: 'preview', failureReason: 'build_failed', exitCode: 3 });
      await vi.waitFor(() =>
        expect(events.find((e) => e.data.deployId === broken.id)).toMatchObject({ event: 'deploy.failed', data: { reason: 'build_failed' } }),
      );

      const slow = await finished(p.slug, (await callHook((await createHook(p.slug, 'slow')).token)).json().deployId);
      expect(slow).toMatchObject({ status: 'failed', failureReason: 'timeout' });
      expect(await logLines(slow.id)).toContain('sleeping');
    });

    it('answers 409 production_deploy_busy while a production deploy is queued or building; previews of other branches still queue', async () => {
      const p = await projectWithSource();
      // The slow branch as the default branch: its production build holds the slot for a while.
      await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/deploys/settings`, headers: asOwner(), payload: { defaultBranch: 'slow' } });
      const hook = await createHook(p.slug, 'slow');
      const first = await callHook(hook.token);
      expect(first.statusCode).toBe(202);
      const busy = await callHook(hook.token);
      expect(busy.statusCode).toBe(409);
      expect(busy.json()).toMatchObject({ error: 'production_deploy_busy', activeDeployId: first.json().deployId });
      const preview = await callHook((await createHook(p.slug, 'feature')).token);
      expect(preview.statusCode).toBe(202);
      // Once the production deploy ended (here: past its time limit), the next call is accepted.
      await finished(p.slug, first.json().deployId);
      expect((await callHook(hook.token)).statusCode).toBe(202);
    });

    it('checks the signature when one is sent (HMAC-SHA256 of the raw body keyed with the token)', async () => {
      const p = await projectWithSource();
      const hook = await createHook(p.slug, 'feature');
      const body = '{"ref":"refs/heads/feature"}';
      const good = createHmac('sha256', hook.token).update(body).digest('hex');
      expect((await callHook(hook.token, body, { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` })).json()).toMatchObject({ error: 'invalid_signature' });
      expect((await callHook(hook.token, body, { 'x-hub-signature-256': `sha256=${good}` })).statusCode).toBe(202);
      expect(
        (await callHook(hook.token, body, { 'x-service-signature': `sha256=${good}`, 'content-type': 'application/x-www-form-urlencoded' })).statusCode,
      ).toBe(202);
      // Bodies up to 1 MB (a code host's push payload); past it 413.
      const big = await callHook(hook.token, 'x'.repeat(LIMITS.deploys.hookBodyBytes + 1), { 'content-type': 'application/octet-stream' });
      expect([big.statusCode, big.json().error]).toEqual([413, 'payload_too_large']);
    });

    it('an unknown or deleted token is 404; hook management is session only; the list shows hints, never tokens', async () => {
      const p = await projectWithSource();
      const hook = await createHook(p.slug, 'feature');
      const list = (await app.inject({ url: `/v1/projects/${p.slug}/deploys/hooks`, headers: asOwner() })).json().hooks;
      expect(list).toEqual([expect.objectContaining({ id: hook.id, branch: 'feature', hint: hook.token.slice(0, 'cxhook_'.length + 4) + '…' })]);
      expect(JSON.stringify(list)).not.toContain(hook.token);
      // A parameter copied from another host's hooks is refused, not ignored: nothing queued, the hook not even used.
      const copied = await app.inject({
        method: 'POST',
        url: `/v1/hooks/${hook.token}?buildCache=false`,
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      });
      expect([copied.statusCode, copied.json().error]).toEqual([400, 'invalid_request']);
      expect(JSON.stringify(copied.json())).toContain('buildCache');
      expect((await app.inject({ url: `/v1/projects/${p.slug}/deploys`, headers: asOwner() })).json().data).toEqual([]);
      expect((await app.inject({ url: `/v1/projects/${p.slug}/deploys/hooks`, headers: asOwner() })).json().hooks[0].lastUsedAt).toBeNull();
      const key = await createKey(app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:read', 'deploys:write'] });
      expect((await app.inject({ url: `/v1/projects/${p.slug}/deploys/hooks`, headers: bearer(key.token) })).statusCode).toBe(403);
      expect(
        (await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/hooks`, headers: bearer(key.token), payload: { name: 'x', branch: 'main' } }))
          .statusCode,
      ).toBe(403);
      expect((await app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/deploys/hooks/${hook.id}`, headers: asOwner() })).statusCode).toBe(204);
      expect((await callHook(hook.token)).json()).toMatchObject({ error: 'not_found' });
      expect((await callHook('cxhook_unknown')).statusCode).toBe(404);
      expect((await callHook('not-even-a-hook')).statusCode).toBe(404);
    });

    it('queues through the API with a deploys:write key; a second call for a queued preview returns that deploy', async () => {
      const p = await projectWithSource();
      const key = await createKey(app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:write', 'deploys:read'] });
      // The one build slot (BUILDS_PER_BUILDER=1) busy with a slow build, so previews stay queued meanwhile.
      const slow = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: bearer(key.token), payload: { branch: 'slow' } });
      await vi.waitFor(async () => expect((await deployOf(p.slug, slow.json().deploy.id)).status).toBe('building'), { timeout: 20_000, interval: 50 });
      const a = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: bearer(key.token), payload: { branch: 'feature' } });
      const b = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: bearer(key.token), payload: { branch: 'feature' } });
      expect(a.statusCode).toBe(202);
      expect(a.json()).toMatchObject({ deduplicated: false, deploy: { status: 'queued', trigger: { kind: 'api' } } });
      expect(b.json()).toMatchObject({ deduplicated: true, deploy: { id: a.json().deploy.id } });
      const list = (await app.inject({ url: `/v1/projects/${p.slug}/deploys`, headers: bearer(key.token) })).json();
      expect(list.data.map((d: { id: string }) => d.id)).toEqual([a.json().deploy.id, slow.json().deploy.id]);
      // Both build in turn.
      expect(await finished(p.slug, a.json().deploy.id)).toMatchObject({ status: 'ready', environment: 'preview' });
    });

    it('serves a ready deploy by Host: production at <slug>.localhost, any deploy at <deploy-id>.localhost; rollback serves the older output', async () => {
      const p = await projectWithSource();
      const hook = await createHook(p.slug, 'main');
      const first = await finished(p.slug, (await callHook(hook.token)).json().deployId);
      const site = (host: string, url = '/') => app.inject({ url, headers: { host } });
      const home = await site(`${p.slug}.localhost:8080`);
      expect(home.statusCode).toBe(200);
      expect(home.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(home.headers['cache-control']).toBe('no-cache'); // HTML always revalidates (issue 42)
      expect(home.body).toContain(`production ${first.gitSha}`);
      const asset = await site(`${p.slug}.localhost`, '/assets/app.3f9a2c1b.css');
      expect([asset.statusCode, asset.headers['content-type'], asset.headers['cache-control']]).toEqual([
        200,
        'text/css; charset=utf-8',
        'public, max-age=31536000, immutable',
      ]);
      expect((await site(`${p.slug}.localhost`, '/nope.html')).statusCode).toBe(404);
      expect((await site(`${p.slug}.localhost`, '/../../etc/passwd')).statusCode).toBe(404);
      // A new project's per-deploy hosts are protected (issue 42): the password page until the project opens them.
      const own = `${first.id.replace('_', '-')}.localhost`;
      expect([(await site(own)).statusCode, (await site(own)).body]).toEqual([401, expect.stringContaining('Protected preview')]);
      await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers: asOwner(), payload: { previewProtection: { enabled: false } } });
      await vi.waitFor(async () => expect((await site(own)).body).toContain('production'), { timeout: 5_000, interval: 100 });

      // A second production deploy (a new commit) goes live; rolling back serves the first output again.
      writeFileSync(
        path.join(repo, 'build.sh'),
        readFileSync(path.join(repo, 'build.sh'), 'utf8').replace('production $SERVICE_GIT_SHA', 'second $SERVICE_GIT_SHA'),
      );
      git(repo, 'commit', '-q', '-am', 'second');
      const second = await finished(p.slug, (await callHook(hook.token)).json().deployId);
      await vi.waitFor(async () => expect((await site(`${p.slug}.localhost`)).body).toContain(`second ${second.gitSha}`), { timeout: 5_000, interval: 100 });
      const rollup = (await app.inject({ url: `/v1/projects/${p.slug}`, headers: asOwner() })).json().project;
      expect(rollup.deploys.live).toMatchObject({ id: second.id, status: 'ready' });
      // Suspect commits (issue 41): each build recorded its commits, the second those since the first's sha.
      const commitsOf = async (id: string) => (await app.inject({ url: `/v1/projects/${p.slug}/deploys/${id}/commits`, headers: asOwner() })).json().commits;
      expect(await commitsOf(second.id)).toEqual([expect.objectContaining({ sha: second.gitSha, subject: 'second', files: ['build.sh'] })]);
      expect((await commitsOf(first.id)).map((c: { sha: string }) => c.sha)).toEqual([first.gitSha]);
      const back = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${first.id}/rollback`, headers: asOwner() });
      expect(back.json()).toMatchObject({ live: { id: first.id } });
      await vi.waitFor(async () => expect((await site(`${p.slug}.localhost`)).body).toContain(`production ${first.gitSha}`), { timeout: 5_000, interval: 100 });
      // Only a ready production deploy can be rolled back to.
      const preview = await finished(p.slug, (await callHook((await createHook(p.slug, 'feature')).token)).json().deployId);
      expect((await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${preview.id}/rollback`, headers: asOwner() })).statusCode).toBe(409);
      expect((await app.inject({ url: `/v1/projects/${p.slug}`, headers: asOwner() })).json().project.deploys.previews[0]).toMatchObject({ id: preview.id });
    });

    it('the spa setting (issue 42): the next build serves /index.html for every path no file answers; without it such a path is 404', async () => {
      const p = await projectWithSource();
      const hook = await createHook(p.slug, 'main');
      await finished(p.slug, (await callHook(hook.token)).json().deployId);
      const site = (url: string) => app.inject({ url, headers: { host: `${p.slug}.localhost` } });
      expect((await site('/users/42')).statusCode).toBe(404);
      const patched = await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/deploys/settings`, headers: asOwner(), payload: { spa: true } });
      expect(patched.json().settings).toMatchObject({ spa: true, outputDir: 'out' });
      await finished(p.slug, (await callHook(hook.token)).json().deployId);
      await vi.waitFor(async () => expect((await site('/users/42')).statusCode).toBe(200), { timeout: 5_000, interval: 100 });
      const deep = await site('/users/42');
      expect(deep.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(deep.body).toBe((await site('/')).body); // the home page, whatever this repository's commit writes there
      // Files still answer as themselves.
      expect((await site('/assets/app.3f9a2c1b.css')).headers['content-type']).toBe('text/css; charset=utf-8');
      expect(
        (await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/deploys/settings`, headers: asOwner(), payload: { spa: 'yes' } })).statusCode,
      ).toBe(400);
    });

    it('in the single process the edge answers site hosts itself (uWebSockets.js, files from memory), and relays the rest', async () => {
      const p = await projectWithSource();
      // A new project's per-deploy hosts are protected (issue 42, hosting/serve/preview-protection.test.ts): open here.
      await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}`, headers: asOwner(), payload: { previewProtection: { enabled: false } } });
      const d = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      const edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1', forward: injectForwarder(app) });
      try {
        const get = (host: string, url: string) =>
          new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
            httpRequest({ host: '127.0.0.1', port: edge.port, path: url, headers: { host } }, (res) => {
              let body = '';
              res
                .setEncoding('utf8')
                .on('data', (c: string) => (body += c))
                .on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
            })
              .on('error', reject)
              .end();
          });
        const page = await get(`${p.slug}.localhost:8080`, '/');
        expect([page.status, page.headers['content-type']]).toEqual([200, 'text/html; charset=utf-8']);
        expect(page.body).toContain(d.gitSha);
        const asset = await get(`${d.id.replace('_', '-')}.localhost`, '/assets/app.3f9a2c1b.css');
        expect([asset.status, asset.headers['cache-control']]).toEqual([200, 'public, max-age=31536000, immutable']);
        expect((await get(`${p.slug}.localhost`, '/missing')).status).toBe(404);
        expect((await get('nothing-here.localhost', '/')).status).toBe(404);
        // Not a site: relayed to the API.
        expect(JSON.parse((await get('127.0.0.1', '/v1/')).body)).toHaveProperty('version');
      } finally {
        await edge.close();
      }
    });

    it('cancels a building deploy (its build killed, no deploy event) and a queued one; a finished one is 409', async () => {
      const p = await projectWithSource();
      const slow = (await callHook((await createHook(p.slug, 'slow')).token)).json().deployId;
      await vi.waitFor(async () => expect((await deployOf(p.slug, slow)).status).toBe('building'), { timeout: 20_000, interval: 50 });
      // The one build slot is busy: this one waits queued.
      const queued = (await callHook((await createHook(p.slug, 'feature')).token)).json().deployId;
      const cancelQueued = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${queued}/cancel`, headers: asOwner() });
      expect(cancelQueued.json()).toMatchObject({ deploy: { id: queued, status: 'canceled' } });
      const cancelBuilding = await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${slow}/cancel`, headers: asOwner() });
      expect(cancelBuilding.json()).toMatchObject({ deploy: { id: slow, status: 'building' } });
      // The builder checks for cancels every second, well within the build's time limit (8 s here).
      const ended = await finished(p.slug, slow);
      // `canceled`, not `failed` with `timeout`: the cancel killed it before its time limit did.
      expect(ended).toMatchObject({ status: 'canceled', failureReason: null });
      expect(await logLines(slow)).toContain('canceled');
      expect(events.find((e) => e.data.deployId === slow)).toBeUndefined();
      expect((await app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys/${slow}/cancel`, headers: asOwner() })).statusCode).toBe(409);
    });

    it('reads the build log through the API and through a share link; a wrong or revoked token is the same 404 as no deploy', async () => {
      const p = await projectWithSource();
      const d = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      await vi.waitFor(async () => expect(await logLines(d.id)).toContain('to stderr'), { timeout: 10_000 });
      const log = (await app.inject({ url: `/v1/projects/${p.slug}/deploys/${d.id}/logs`, headers: asOwner() })).json();
      expect(log).toMatchObject({ status: 'ready', done: true });
      expect(log.lines.map((l: { line: string }) => l.line)).toContain('the token is ***');
      expect(log.lines.find((l: { line: string }) => l.line === 'to stderr')).toMatchObject({ stream: 'stderr' });

      const share = (await app.inject({ url: `/v1/projects/${p.slug}/deploys/${d.id}/share`, headers: asOwner() })).json().share;
      expect(share.url).toContain(`/v1/deploy-logs/${p.slug}/${d.id}?token=`);
      const shared = await app.inject({ url: `/v1/deploy-logs/${p.slug}/${d.id}?token=${share.token}` });
      expect(shared.statusCode).toBe(200);
      expect(shared.json().lines.map((l: { line: string }) => l.line)).toEqual(log.lines.map((l: { line: string }) => l.line));
      const wrong = await app.inject({ url: `/v1/deploy-logs/${p.slug}/${d.id}?token=cxlog_wrong` });
      const none = await app.inject({ url: `/v1/deploy-logs/${p.slug}/dep_nope?token=${share.token}` });
      const missing = await app.inject({ url: `/v1/deploy-logs/${p.slug}/${d.id}` });
      expect([wrong.statusCode, missing.statusCode, none.statusCode]).toEqual([404, 404, 404]);
      expect(wrong.json()).toEqual(none.json());
      expect((await app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/deploys/${d.id}/share`, headers: asOwner() })).statusCode).toBe(204);
      expect((await app.inject({ url: `/v1/deploy-logs/${p.slug}/${d.id}?token=${share.token}` })).statusCode).toBe(404);
    });

    it('webhooks receive deploy.succeeded and deploy.failed, signed so the shipped verifier accepts them', async () => {
      const p = await projectWithSource();
      const created = await app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/webhooks`,
        headers: asOwner(),
        payload: { url: receiver.url.replace('/hook', `/${p.slug}`), events: ['deploy.*'] },
      });
      expect(created.statusCode).toBe(201);
      const secret = created.json().endpoint.secret;
      const ok = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      const bad = await finished(p.slug, (await callHook((await createHook(p.slug, 'broken')).token)).json().deployId);
      const mine = () => receiver.requests.filter((r) => r.path === `/${p.slug}`);
      await vi.waitFor(() => expect(mine()).toHaveLength(2), { timeout: 15_000, interval: 50 });
      const bodies = mine().map((r) => verifyWebhook(r.body, r.headers['service-signature'] as string, secret));
      expect(bodies).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            event: 'deploy.succeeded',
            data: expect.objectContaining({
              deployId: ok.id,
              gitSha: ok.gitSha,
              environment: 'production',
              url: expect.stringContaining('.localhost'),
              reason: null,
            }),
          }),
          expect.objectContaining({
            event: 'deploy.failed',
            data: expect.objectContaining({ deployId: bad.id, environment: 'preview', reason: 'build_failed' }),
          }),
        ]),
      );
      expect(typeof bodies[0]!.data.durationMs).toBe('number');
    });

    it("§7.4: a server error event naming a ready deploy (by id or git sha) is stamped with that deploy's environment", async () => {
      const p = await projectWithSource();
      const prod = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      const preview = await finished(p.slug, (await callHook((await createHook(p.slug, 'feature')).token)).json().deployId);
      const pipeline = createErrorPipeline({
        db: platform.db,
        analytics: platform.analytics,
        mailer: platform.mailer,
        clock: platform.clock,
        logger: platform.logger,
        publicBaseUrl: 'http://localhost',
      });
      const event = (name: string, over: Record<string, string>) => stampErrorEvent({ name, message: name, ...over }, `evt-${name}-${p.id}`, 'node');
      await pipeline.handleBatch([
        {
          projectId: p.id,
          originHost: null,
          receivedAt: Date.now(),
          events: [event('ByDeployId', { deployId: prod.id }), event('ByGitSha', { gitSha: preview.gitSha }), event('Unknown', { deployId: 'dep_nope' })],
        },
      ]);
      const groups = await platform.db.query<{ name: string; env_counts: Record<string, number> }>(
        'SELECT name, env_counts FROM error_groups WHERE project_id = $1 ORDER BY name',
        [p.id],
      );
      expect(Object.fromEntries(groups.rows.map((g) => [g.name, Object.keys(g.env_counts)]))).toEqual({
        ByDeployId: ['production'],
        ByGitSha: ['preview'],
        Unknown: ['unknown'],
      });
    });

    it('a production build going live resolves the issues resolved in next deploy before it, with issue.resolved naming it; a preview build does not (issue 41)', async () => {
      const p = await projectWithSource();
      const first = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      const pipeline = createErrorPipeline({
        db: platform.db,
        analytics: platform.analytics,
        mailer: platform.mailer,
        clock: platform.clock,
        logger: platform.logger,
        publicBaseUrl: 'http://localhost',
      });
      await pipeline.handleBatch([
        {
          projectId: p.id,
          originHost: null,
          receivedAt: Date.now(),
          events: [stampErrorEvent({ name: 'NextDeployBug', message: 'm', deployId: first.id }, `evt-next-${p.id}`, 'node')],
        },
      ]);
      const groupId = (await platform.db.query<{ id: string }>('SELECT id FROM error_groups WHERE project_id = $1', [p.id])).rows[0]!.id;
      const issue = async () => (await app.inject({ url: `/v1/projects/${p.slug}/errors/${groupId}`, headers: asOwner() })).json().issue;
      const marked = await app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/errors/${groupId}/resolve`,
        headers: asOwner(),
        payload: { inNextDeploy: true },
      });
      expect(marked.json().issue).toMatchObject({ status: 'resolving', resolveInNextDeploy: { markedAt: { id: first.id } } });
      // A preview build finishing resolves nothing.
      await finished(p.slug, (await callHook((await createHook(p.slug, 'feature')).token)).json().deployId);
      expect((await issue()).status).toBe('resolving');
      // The next production build goes live: resolved by it, stored so, and announced.
      git(repo, 'commit', '-q', '--allow-empty', '-m', 'the fix');
      const next = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
      expect(next.status).toBe('ready');
      expect(await issue()).toMatchObject({ status: 'resolved', resolveInNextDeploy: { resolvedBy: { id: next.id } } });
      const row = await platform.db.query('SELECT status, resolved_deploy_id FROM error_groups WHERE id = $1', [groupId]);
      expect(row.rows[0]).toEqual({ status: 'resolved', resolved_deploy_id: next.id });
      await vi.waitFor(() => expect(events.some((e) => e.event === 'issue.resolved' && e.projectId === p.id)).toBe(true), { timeout: 10_000, interval: 50 });
      const resolved = events.find((e) => e.event === 'issue.resolved' && e.projectId === p.id)!;
      expect(resolved).toMatchObject({
        id: `issue.resolved:${groupId}:${next.id}`,
        data: { issue: { id: groupId }, deploy: { id: next.id, gitSha: next.gitSha } },
      });
    });

    it('follows a running build live (Server-Sent Events) until it ends', async () => {
      const p = await projectWithSource();
      const d = (await callHook((await createHook(p.slug, 'slow')).token)).json().deployId;
      const res = await app.inject({ url: `/v1/projects/${p.slug}/deploys/${d}/logs`, headers: { ...asOwner(), accept: 'text/event-stream' } });
      expect(res.headers['content-type']).toBe('text/event-stream');
      const events = res.body.split('\n\n').filter(Boolean);
      expect(events.some((e) => e.includes('event: line') && e.includes('"line":"sleeping"'))).toBe(true);
      expect(events.at(-1)).toBe('event: end\ndata: {"status":"failed"}');
    });

    it('checks an https repository again before cloning: a host that now resolves to a private address fails checkout_failed', async () => {
      const p = await projectWithSource();
      outbound.resolveWith = async (host) => [{ address: host === 'git.rebinding.test' ? '93.184.216.34' : '127.0.0.1', family: 4 }];
      try {
        const saved = await app.inject({
          method: 'PATCH',
          url: `/v1/projects/${p.slug}/deploys/settings`,
          headers: asOwner(),
          payload: { repoUrl: 'https://git.rebinding.test/app.git' },
        });
        expect(saved.statusCode).toBe(200);
        // The name now points at a private address (DNS rebinding): the builder refuses before git runs.
        outbound.resolveWith = async () => [{ address: '10.0.0.5', family: 4 }];
        const d = await finished(p.slug, (await callHook((await createHook(p.slug, 'main')).token)).json().deployId);
        expect(d).toMatchObject({ status: 'failed', failureReason: 'checkout_failed' });
        await vi.waitFor(async () => expect((await logLines(d.id)).some((l) => l.startsWith('repository refused:'))).toBe(true), { timeout: 10_000 });
      } finally {
        outbound.resolveWith = undefined;
      }
    });

    it('keeps secret build variables write-only, and refuses non-https or local repositories unless allowed', async () => {
      const p = await projectWithSource();
      const settings = (await app.inject({ url: `/v1/projects/${p.slug}/deploys/settings`, headers: asOwner() })).json().settings;
      expect(settings.env).toEqual([
        { name: 'API_TOKEN', secret: true, value: null, hint: expect.stringMatching(/^…ue \(24 chars\)$/) },
        { name: 'PLAIN', secret: false, value: 'visible', hint: null },
      ]);
      expect(JSON.stringify(settings)).not.toContain(SECRET);
      const http = await app.inject({
        method: 'PATCH',
        url: `/v1/projects/${p.slug}/deploys/settings`,
        headers: asOwner(),
        payload: { repoUrl: 'http://example.com/repo.git' },
      });
      expect(http.json().error).toBe('url_not_https');
      const outside = await app.inject({
        method: 'PATCH',
        url: `/v1/projects/${p.slug}/deploys/settings`,
        headers: asOwner(),
        payload: { outputDir: '../etc' },
      });
      expect(outside.json().error).toBe('invalid_request');
      expect(existsSync(repo)).toBe(true);
    });
  });

  describe('build log', () => {
    it('stores at most the cap, the last stored line saying the log was cut; long lines are cut; secrets masked in every line', async () => {
      const deployId = `dep_logcap_${Date.now()}`;
      const log = createBuildLog({
        analytics: platform.analytics,
        projectId: 'prj_logcap',
        deployId,
        secrets: ['abcd-secret', 'xy'],
        now: () => Date.now(),
        maxLines: 5,
        maxLineChars: 20,
      });
      log.write('stdout', 'one abcd-secret\ntwo ');
      log.write('stdout', 'continued\n' + 'x'.repeat(50) + '\nthree xy\nfour\nfive\nsix\n');
      await log.close();
      const lines = await logLines(deployId);
      expect(lines).toEqual([
        'one ***',
        'two continued',
        `${'x'.repeat(20)} [line cut at 20 characters]`,
        'three xy',
        "[log cut at 5 lines: the rest of this build's output is not stored]",
      ]);
      expect(log.stored).toBe(5);
      expect(LIMITS.deploys.logLinesPerDeploy).toBe(10_000);
    });
  });
}
