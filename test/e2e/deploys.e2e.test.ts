import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { start, type Running, type StartOptions } from '../../service/service.ts';
import { describeWith } from '../support/backends.ts';
import { distributedEnv } from './support/distributed-env.ts';
import { eventually, getWithHost, http, newProject, signedInUser, type ServiceUrls } from './support/http-client.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { spawnRole, type RoleProcess } from './support/spawn-role.ts';

/**
 * Deploys distributed: the API in this process, two builder processes, on Postgres + Kafka + ClickHouse.
 * - §3.3 across processes: however hook calls and builders interleave, a project never has two production
 *   deploys building at once, while previews build side by side on both builders;
 * - kill -9 of a builder mid-build: its deploy ends `builder_lost` once the lease runs out, and the next
 *   hook call is accepted;
 * - a ready deploy's page over HTTP from its site host.
 */
const LEASE_MS = 2_000;

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

describeWith(['postgres', 'kafka', 'clickhouse', 'redis'], 'deploys on Postgres + Kafka + ClickHouse, two builders', () => {
  let api: Running;
  let urls: ServiceUrls;
  let env: Record<string, string>;
  let testing: NonNullable<StartOptions['testing']>;
  const builders: RoleProcess[] = [];
  let repo: string;
  let cookie: string;

  beforeAll(async () => {
    repo = await mkdtemp(path.join(os.tmpdir(), 'e2e-deploy-repo-'));
    git(repo, 'init', '-q', '-b', 'main');
    // Every build takes about three seconds, so builds overlap; `long` runs until killed.
    await writeFile(path.join(repo, 'build.sh'), 'sleep 3; mkdir -p out; echo "<h1>built $SERVICE_GIT_SHA</h1>" > out/index.html; echo done');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'main');
    for (const b of ['p1', 'p2', 'p3']) git(repo, 'branch', b);
    git(repo, 'checkout', '-q', '-b', 'long');
    await writeFile(path.join(repo, 'build.sh'), 'echo started; sleep 60');
    git(repo, 'commit', '-q', '-am', 'long');
    git(repo, 'checkout', '-q', 'main');

    env = distributedEnv({
      dataDir: await mkdtemp(path.join(os.tmpdir(), 'e2e-deploys-')),
      smtpUrl: 'smtp://127.0.0.1:1',
      overrides: { ALLOW_LOCAL_REPOS: 'true', BUILD_TIMEOUT_MS: '120000' },
    });
    testing = { buildLeaseMs: LEASE_MS };
    api = await start('api', loadConfig(env), createLogger('silent', 'e2e-deploys'), { testing });
    urls = { apiUrl: `http://127.0.0.1:${api.port}`, ingestUrl: `http://127.0.0.1:${api.port}` };
    // The topic exists before the builders join their group, so both are assigned partitions at once.
    await api.platform.bus.publish(TOPICS.deployRequests, [{ key: 'warm-up', value: Buffer.from('{}') }]);
    for (let i = 0; i < 2; i++) builders.push(await spawnRole('builder', env, testing));
    cookie = (await signedInUser(api.platform, urls)).cookie;
  });

  afterAll(async () => {
    for (const b of builders) await b.kill();
    await api?.stop();
  });

  const session = () => ({ cookie, 'sec-fetch-site': 'same-origin' });

  async function project(defaultBranch = 'main') {
    const p = await newProject(urls, cookie);
    const res = await http(`${urls.apiUrl}/v1/projects/${p.slug}/deploys/settings`, {
      method: 'PATCH',
      headers: session(),
      body: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out', defaultBranch },
    });
    expect(res.status).toBe(200);
    return p;
  }

  async function hook(slug: string, branch: string): Promise<string> {
    const res = await http(`${urls.apiUrl}/v1/projects/${slug}/deploys/hooks`, { method: 'POST', headers: session(), body: { name: branch, branch } });
    expect(res.status).toBe(201);
    return res.json.hook.token;
  }

  const call = (token: string) => http(`${urls.apiUrl}/v1/hooks/${token}`, { method: 'POST', body: {} });
  const deploy = async (slug: string, id: string) => (await http(`${urls.apiUrl}/v1/projects/${slug}/deploys/${id}`, { headers: session() })).json.deploy;
  const done = (slug: string, id: string) =>
    eventually(
      `deploy ${id} finished`,
      async () => {
        const d = await deploy(slug, id);
        return ['ready', 'failed'].includes(d.status) ? d : undefined;
      },
      60_000,
    );

  it('never builds two production deploys of one project at once; previews build side by side', { timeout: 120_000 }, async () => {
    const p = await project();
    const prod = await hook(p.slug, 'main');
    const previews = await Promise.all(['p1', 'p2', 'p3'].map((b) => hook(p.slug, b)));
    const db = api.platform.db;
    let maxProduction = 0;
    let maxBuilding = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const r = await db.query<{ environment: string; n: string }>(
          `SELECT environment, count(*) AS n FROM deploys WHERE project_id = $1 AND status = 'building' GROUP BY environment`,
          [p.id],
        );
        const by = Object.fromEntries(r.rows.map((x) => [x.environment, Number(x.n)]));
        maxProduction = Math.max(maxProduction, by.production ?? 0);
        maxBuilding = Math.max(maxBuilding, (by.production ?? 0) + (by.preview ?? 0));
        await new Promise((res) => setTimeout(res, 25));
      }
    })();
    // Production hook calls keep coming (every 0.5 s, under the per-token limit): each is 202 when the slot is
    // free, 409 naming the active one otherwise.
    const accepted: string[] = [];
    const statuses = new Set<number>();
    try {
      const firstPreviews = await Promise.all(previews.map(call));
      for (const r of firstPreviews) expect(r.status).toBe(202);
      for (let i = 0; accepted.length < 3 && i < 100; i++) {
        const r = await call(prod);
        statuses.add(r.status);
        if (r.status === 202) accepted.push(r.json.deployId);
        else expect(r.json).toMatchObject({ error: 'production_deploy_busy', activeDeployId: expect.stringMatching(/^dep_/) });
        await new Promise((res) => setTimeout(res, 500));
      }
      for (const id of [...accepted, ...firstPreviews.map((r) => r.json.deployId)]) expect((await done(p.slug, id)).status).toBe('ready');
    } finally {
      sampling = false;
      await sampler;
    }
    expect(accepted).toHaveLength(3);
    expect(statuses).toEqual(new Set([202, 409]));
    expect(maxProduction).toBe(1);
    // Two builders, one build each at a time: previews (and production) overlapped.
    expect(maxBuilding).toBe(2);
  });

  it('a builder killed mid-build leaves builder_lost once its lease runs out, and the next hook call is accepted', { timeout: 120_000 }, async () => {
    const p = await project('long');
    const token = await hook(p.slug, 'long');
    const first = await call(token);
    expect(first.status).toBe(202);
    const id = first.json.deployId;
    const owner = await eventually('the build started', async () => {
      const r = await api.platform.db.query<{ lease_owner: string | null; status: string }>('SELECT lease_owner, status FROM deploys WHERE id = $1', [id]);
      return r.rows[0]?.status === 'building' ? r.rows[0].lease_owner : undefined;
    });
    expect((await call(token)).status).toBe(409);
    // The builder holding the lease (its pid is in the owner id): killed outright.
    const victim = builders.find((b) => owner === `bld_${b.child.pid}` || owner?.startsWith(`bld_${b.child.pid}_`));
    if (!victim) throw new Error(`no builder process holds ${owner}`);
    await victim.kill();
    builders.splice(builders.indexOf(victim), 1);
    // Restarted, as an orchestrator would (the next test needs a free builder: the survivor takes `long` again).
    builders.push(await spawnRole('builder', env, testing));
    const lost = await done(p.slug, id);
    expect(lost).toMatchObject({ status: 'failed', failureReason: 'builder_lost' });
    expect(owner).toMatch(/^bld_\d+_/);
    const next = await call(token);
    expect(next.status).toBe(202);
    // The surviving builder takes it (and it runs until the test ends; its lease keeps it alive).
    await eventually('the next build started', async () => ((await deploy(p.slug, next.json.deployId)).status === 'building' ? true : undefined));
  });

  it('serves a ready deploy over HTTP from its site host', { timeout: 60_000 }, async () => {
    const p = await project();
    const res = await call(await hook(p.slug, 'main'));
    const d = await done(p.slug, res.json.deployId);
    expect(d.status).toBe('ready');
    const page = await getWithHost(`${urls.apiUrl}/`, `${p.slug}.localhost`);
    expect(page.status).toBe(200);
    expect(page.body).toContain(`built ${d.gitSha}`);
  });
});
