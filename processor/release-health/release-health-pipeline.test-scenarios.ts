import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { newId } from '../../platform/tokens.ts';
import { encode, TOPIC, type ClientItemsMessage, type SessionAggregate, type SessionUpdate } from '../../schemas/bus/client-items.ts';
import type { DeployHealthAnswer, ReleaseHealthAnswer } from '../../schemas/api/release-health.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed, type TestPlatformOptions } from '../../test/support/platform.ts';
import { startClientItemsConsumer } from '../client-items/client-items-consumer.ts';
import type { PipelineConsumer } from '../pipeline-consumer.ts';
import { updateRow } from './steps/row-step.ts';
import { createStoreStep } from './steps/store-step.ts';

/**
 * Release health end to end, run by release-health-pipeline.test.ts (embedded: PGlite, chDB, in-process bus) and
 * release-health-pipeline.int.test.ts (Postgres, Kafka, ClickHouse over HTTP): client-items messages go onto the bus
 * as the edge publishes them (schemas/bus/client-items.ts), the consumer runs, and the numbers are read through the
 * API routes (api/release-health/) and the table itself.
 */
const SITES = 'sites.test';
const HOUR = 3_600_000;
/** A whole hour two hours ago: every session of these scenarios starts in it. */
const BASE = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
const RANGE = `since=${BASE - HOUR}&until=${BASE + 2 * HOUR}`;

interface Harness {
  platform: Platform;
  request(url: string): Promise<{ statusCode: number; json(): unknown }>;
  newProject(): Promise<{ id: string; slug: string }>;
  deploy(projectId: string, o?: { sha?: string; environment?: 'production' | 'preview'; live?: boolean; finishedAt?: number }): Promise<string>;
  publish(msg: ClientItemsMessage): Promise<void>;
  consumer: PipelineConsumer<string>;
  rows(projectId: string): Promise<Array<{ session_id: string; deploy_id: string; release: string; environment: string; kind: string }>>;
  close(): Promise<void>;
}

async function createHarness(opts: { real?: TestPlatformOptions['real'] }): Promise<Harness> {
  const api = await buildTestApi({ real: opts.real, env: { BUS_NAME_SUFFIX: `.release-health-test.${randomUUID()}`, SITES_DOMAIN: SITES } });
  const consumer = await startClientItemsConsumer(api.platform);
  const user = await signUpAndSignIn(api.app, api.platform);
  const newProject = async () => {
    const p = await createProject(api.app, user.cookie, { environmentHosts: { production: ['app.example.com'], preview: ['*.preview.example.com'] } });
    return { id: p.id, slug: p.slug };
  };
  const sentinelProject = await newProject();
  const kafka = api.platform.bus.adapter === 'kafka';
  const ch = api.platform.analytics;
  return {
    platform: api.platform,
    consumer,
    newProject,
    request: (url) => api.app.inject({ method: 'GET', url, headers: sessionHeaders(user.cookie) }),
    async deploy(projectId, o = {}) {
      const id = newId('dep_');
      await api.platform.db.query(
        `INSERT INTO deploys (id, project_id, branch, environment, status, git_sha, artifact_dir, created_at, finished_at)
         VALUES ($1, $2, 'main', $3, 'ready', $4, '/tmp/x', $5, $5)`,
        [id, projectId, o.environment ?? 'production', o.sha ?? null, new Date(o.finishedAt ?? BASE - HOUR)],
      );
      if (o.live) await api.platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, id]);
      return id;
    },
    async publish(msg) {
      await api.platform.bus.publish(TOPIC, [{ key: msg.projectId, value: encode(msg) }]);
      if (!kafka) return processed(api.platform);
      // Kafka: a sentinel on the same partition (same key) is handled after `msg` (one delivery in flight), so once
      // its row is in the table, `msg` has been handled.
      const sentinel = message(sentinelProject.id, { sessions: [session({ sid: randomUUID() })], originHost: null });
      await api.platform.bus.publish(TOPIC, [{ key: msg.projectId, value: encode(sentinel) }]);
      await vi.waitFor(
        async () => expect(await ch.query('SELECT 1 FROM release_sessions WHERE batch_id = {b:String}', { b: sentinel.batchId })).toHaveLength(1),
        { timeout: 30_000, interval: 50 },
      );
    },
    rows: (projectId) =>
      ch.query('SELECT session_id, deploy_id, release, environment, kind FROM release_sessions FINAL WHERE project_id = {p:String} ORDER BY batch_id, item', {
        p: projectId,
      }),
    async close() {
      await consumer.stop();
      await api.close();
    },
  };
}

function message(projectId: string, o: Partial<ClientItemsMessage> = {}): ClientItemsMessage {
  return { v: 1, batchId: randomUUID(), projectId, originHost: 'app.example.com', receivedAt: BASE + 30 * 60_000, ...o };
}

function session(o: Partial<SessionUpdate> = {}): SessionUpdate {
  return { sid: randomUUID(), init: true, status: 'ok', errors: 0, started: BASE + 60_000, timestamp: BASE + 60_000, ...o };
}

function aggregate(o: Partial<SessionAggregate> = {}): SessionAggregate {
  return { started: BASE + 5 * 60_000, exited: 0, errored: 0, abnormal: 0, crashed: 0, ...o };
}

const dropped = (h: Harness, reason: string) => (h.consumer.stats().dropped as Record<string, number>)[reason] ?? 0;

export function defineReleaseHealthScenarios(opts: { real?: TestPlatformOptions['real'] } = {}) {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness(opts);
  }, 120_000);
  afterAll(async () => h?.close());

  it('counts init, ok, errored, crashed, unhandled, abnormal and exited updates as Sentry does, per deploy named by git sha, and answers crash-free sessions and users', async () => {
    const p = await h.newProject();
    const sha = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
    const dep = await h.deploy(p.id, { sha, live: true });
    const [s1, s2, s3, s4, s5, s6, s7] = Array.from({ length: 7 }, () => randomUUID());
    const server = { originHost: null };
    const rel = { release: sha.toUpperCase() };
    await h.publish(
      message(p.id, {
        ...server,
        sessions: [
          session({ sid: s1, did: 'u1', ...rel }),
          session({ sid: s2, did: 'u2', ...rel }),
          session({ sid: s3, did: 'u3', ...rel }),
          session({ sid: s4, did: 'u1', ...rel }),
          session({ sid: s7, did: 'u5', ...rel }),
        ],
      }),
    );
    await h.publish(
      message(p.id, {
        ...server,
        sessions: [
          // s1: an error, then another (errored once), then it ends
          session({ sid: s1, did: 'u1', init: false, errors: 1, ...rel }),
          session({ sid: s1, did: 'u1', init: false, errors: 2, status: 'exited', ...rel }),
          // s2: errors, then crashes: crashed, not errored
          session({ sid: s2, did: 'u2', init: false, errors: 1, ...rel }),
          session({ sid: s2, did: 'u2', init: false, errors: 2, status: 'crashed', ...rel }),
          session({ sid: s3, did: 'u3', init: false, status: 'exited', ...rel }),
          session({ sid: s4, did: 'u1', init: false, status: 'abnormal', ...rel }),
          // s5: starts errored (status errored) in one update; s6 has no user
          session({ sid: s5, did: 'u4', status: 'errored', errors: 1, ...rel }),
          session({ sid: s6, ...rel }),
          // s7: an uncaught error in a page that goes on (@sentry/browser 10+): counted as crashed, named unhandled
          session({ sid: s7, did: 'u5', init: false, errors: 1, status: 'unhandled', ...rel }),
        ],
      }),
    );

    const res = await h.request(`/v1/projects/${p.slug}/release-health?${RANGE}&interval=hour`);
    expect(res.statusCode).toBe(200);
    const body = res.json() as ReleaseHealthAnswer;
    expect(body.liveDeployId).toBe(dep);
    expect(body.deploys).toHaveLength(1);
    const want = {
      sessions: 7,
      crashed: 2,
      unhandled: 1,
      errored: 2,
      abnormal: 1,
      healthy: 2,
      crashFreeSessions: 1 - 2 / 7,
      users: 5,
      crashedUsers: 2,
      crashFreeUsers: 0.6,
    };
    expect(body.deploys[0]).toMatchObject({ deployId: dep, release: null, live: true, totals: want });
    expect(body.deploys[0]!.series.map((x) => [x.bucket, x.sessions])).toEqual([
      [new Date(BASE - HOUR).toISOString(), 0],
      [new Date(BASE).toISOString(), 7],
      [new Date(BASE + HOUR).toISOString(), 0],
    ]);
    expect(body.deploys[0]!.series[1]).toMatchObject(want);
    expect(body.deploys[0]!.series[0]!.crashFreeSessions).toBeNull();
    // Stamped production by the deploy its sha names (§7.4): an environment filter sees it or not.
    expect(((await h.request(`/v1/projects/${p.slug}/release-health?${RANGE}&environment=production`)).json() as ReleaseHealthAnswer).deploys).toHaveLength(1);
    expect(((await h.request(`/v1/projects/${p.slug}/release-health?${RANGE}&environment=preview`)).json() as ReleaseHealthAnswer).deploys).toHaveLength(0);

    const one = await h.request(`/v1/projects/${p.slug}/deploys/${dep}/health?${RANGE}`);
    expect(one.statusCode).toBe(200);
    expect(one.json() as DeployHealthAnswer).toMatchObject({ deployId: dep, live: true, totals: want });
  });

  it('adds aggregates (server-mode counts) to individual sessions of the same deploy, named by its deploy id', async () => {
    const p = await h.newProject();
    const dep = await h.deploy(p.id);
    await h.publish(
      message(p.id, {
        originHost: null,
        sessionAggregates: [
          aggregate({ exited: 10, errored: 3, abnormal: 1, crashed: 2, release: dep }),
          aggregate({ exited: 4, crashed: 0, did: 'u9', release: dep }),
          aggregate({ exited: 1, crashed: 1, did: 'u8', release: dep }),
        ],
        sessions: [session({ release: dep, did: 'u9' }), session({ release: dep, status: 'crashed', did: 'u7' })],
      }),
    );
    const body = (await h.request(`/v1/projects/${p.slug}/deploys/${dep}/health?${RANGE}&interval=day`)).json() as DeployHealthAnswer;
    expect(body.totals).toEqual({
      sessions: 16 + 4 + 2 + 2,
      crashed: 2 + 1 + 1,
      unhandled: 0,
      errored: 3,
      abnormal: 1,
      healthy: 24 - 4 - 3 - 1,
      crashFreeSessions: 1 - 4 / 24,
      users: 3,
      crashedUsers: 2,
      crashFreeUsers: 1 - 2 / 3,
    });
    expect(body.live).toBe(false);
  });

  it('a re-delivered message writes nothing new and counts as duplicates', async () => {
    const p = await h.newProject();
    const msg = message(p.id, { sessions: [session({ did: 'u1' }), session({ did: 'u2', status: 'crashed' })], sessionAggregates: [aggregate({ exited: 3 })] });
    const before = h.consumer.stats().duplicates;
    await h.publish(msg);
    await h.publish(msg);
    expect(h.consumer.stats().duplicates - before).toBe(3);
    const written = await h.platform.analytics.query<{ n: number | string }>('SELECT count() AS n FROM release_sessions WHERE batch_id = {b:String}', {
      b: msg.batchId,
    });
    expect(Number(written[0]!.n)).toBe(3);
    const body = (await h.request(`/v1/projects/${p.slug}/release-health?${RANGE}`)).json() as ReleaseHealthAnswer;
    expect(body.deploys[0]!.totals).toMatchObject({ sessions: 5, crashed: 1 });
  });

  it('an insert retried after ClickHouse took it (a crash before the bus committed) writes no second copy: the token from the batch ids', async () => {
    const p = await h.newProject();
    const batchId = randomUUID();
    const row = (item: number) =>
      updateRow(session({ did: `u${item}` }), item, {
        projectId: p.id,
        batchId,
        receivedAt: BASE + HOUR,
        environment: 'production',
        deployId: '',
        release: '',
      });
    const rows = [0, 1].map((i) => {
      const r = row(i);
      if (r.kind !== 'ok') throw new Error('row dropped');
      return r.value;
    });
    const store = createStoreStep({ analytics: h.platform.analytics });
    await store.store(rows);
    await store.store([...rows].reverse());
    const written = await h.platform.analytics.query<{ n: number | string }>('SELECT count() AS n FROM release_sessions WHERE batch_id = {b:String}', {
      b: batchId,
    });
    expect(Number(written[0]!.n)).toBe(2);
    expect(await store.claim([{ projectId: p.id, batchId, receivedAt: BASE + HOUR }])).toEqual(new Set());
  });

  it('drops the sessions of a project that does not exist, and sessions started too long before they were received, by reason', async () => {
    const p = await h.newProject();
    const unknown = dropped(h, 'release_health_unknown_project');
    const old = dropped(h, 'release_health_session_too_old');
    await h.publish(message(`prj_${randomUUID().replace(/-/g, '')}`, { sessions: [session(), session()], sessionAggregates: [aggregate({ exited: 1 })] }));
    const ahead = randomUUID();
    await h.publish(
      message(p.id, {
        sessions: [
          session({ started: BASE + 30 * 60_000 - 6 * 24 * HOUR }),
          // A client clock ahead of the edge: counted when the edge received it.
          session({ sid: ahead, started: BASE + 5 * HOUR }),
        ],
      }),
    );
    expect(dropped(h, 'release_health_unknown_project') - unknown).toBe(3);
    expect(dropped(h, 'release_health_session_too_old') - old).toBe(1);
    expect((await h.rows(p.id)).map((r) => r.session_id)).toEqual([ahead]);
    const body = (await h.request(`/v1/projects/${p.slug}/release-health?${RANGE}`)).json() as ReleaseHealthAnswer;
    expect(body.deploys[0]!.series.find((x) => x.sessions)?.bucket).toBe(new Date(BASE).toISOString());
  });

  it('names the deploy by id, by git sha, by a deploy host, by the live deploy of a production host; otherwise keeps the release as sent', async () => {
    const p = await h.newProject();
    const other = await h.newProject();
    const sha = 'ffeeddccbbaa99887766554433221100ffeeddcc';
    const bySha = await h.deploy(p.id, { sha });
    const preview = await h.deploy(p.id, { environment: 'preview' });
    const live = await h.deploy(p.id, { live: true });
    const foreign = await h.deploy(other.id);
    const sid = (n: number) => `s${n}-${p.id}`;
    await h.publish(
      message(p.id, {
        originHost: null,
        sessions: [
          session({ sid: sid(1), release: preview }),
          session({ sid: sid(2), release: sha.toUpperCase() }),
          session({ sid: sid(3), release: foreign }),
          session({ sid: sid(4), release: 'web@1.2.3' }),
        ],
      }),
    );
    // A browser: the deploy's own host, the slug host and a configured production host (the live deploy), a host of
    // no deploy, and an unknown one.
    await h.publish(message(p.id, { originHost: `${preview.replace('_', '-')}.${SITES}:8080`, sessions: [session({ sid: sid(5), release: 'web@1.2.3' })] }));
    await h.publish(message(p.id, { originHost: `${p.slug}.${SITES}`, sessions: [session({ sid: sid(6), release: 'web@1.2.3' })] }));
    await h.publish(message(p.id, { originHost: 'app.example.com', sessions: [session({ sid: sid(7) })] }));
    await h.publish(message(p.id, { originHost: 'pr-1.preview.example.com', sessions: [session({ sid: sid(8), release: 'web@1.2.4' })] }));
    await h.publish(message(p.id, { originHost: 'elsewhere.example.net', sessions: [session({ sid: sid(9), release: 'web@1.2.5' })] }));
    // The release wins over the host: a browser session naming a deploy's sha is that deploy's.
    await h.publish(message(p.id, { originHost: 'app.example.com', sessions: [session({ sid: sid(10), release: sha })] }));
    // Received before the live deploy was built: sent by an older one, which live deploys keep no history of.
    await h.publish(
      message(p.id, {
        originHost: 'app.example.com',
        receivedAt: BASE - 2 * HOUR,
        sessions: [session({ sid: sid(11), started: BASE - 2 * HOUR, release: 'web@1.2.0' })],
      }),
    );

    const rows = new Map((await h.rows(p.id)).map((r) => [r.session_id, { deploy: r.deploy_id, release: r.release, environment: r.environment }]));
    expect(Object.fromEntries([...rows].map(([k, v]) => [k.split('-')[0], v]))).toEqual({
      s1: { deploy: preview, release: preview, environment: 'preview' },
      s2: { deploy: bySha, release: sha.toUpperCase(), environment: 'production' },
      s3: { deploy: '', release: foreign, environment: 'unknown' },
      s4: { deploy: '', release: 'web@1.2.3', environment: 'unknown' },
      s5: { deploy: preview, release: 'web@1.2.3', environment: 'preview' },
      s6: { deploy: live, release: 'web@1.2.3', environment: 'production' },
      s7: { deploy: live, release: '', environment: 'production' },
      s8: { deploy: '', release: 'web@1.2.4', environment: 'preview' },
      s9: { deploy: '', release: 'web@1.2.5', environment: 'unknown' },
      s10: { deploy: bySha, release: sha, environment: 'production' },
      s11: { deploy: '', release: 'web@1.2.0', environment: 'production' },
    });

    // The project route groups by deploy, and by release string where no deploy was named.
    const body = (await h.request(`/v1/projects/${p.slug}/release-health?since=${BASE - 3 * HOUR}&until=${BASE + HOUR}`)).json() as ReleaseHealthAnswer;
    const groups = body.deploys.map((d) => [d.deployId ?? `release:${d.release}`, d.totals.sessions, d.live]);
    expect(groups).toEqual(
      expect.arrayContaining([
        [live, 2, true],
        [bySha, 2, false],
        [preview, 2, false],
        ['release:web@1.2.3', 1, false],
        [`release:${foreign}`, 1, false],
      ]),
    );
    expect(groups).toHaveLength(8);
    const onlyRelease = (
      await h.request(`/v1/projects/${p.slug}/release-health?since=${BASE - 3 * HOUR}&until=${BASE + HOUR}&deploy=web%401.2.4`)
    ).json() as ReleaseHealthAnswer;
    expect(onlyRelease.deploys.map((d) => [d.release, d.totals.sessions])).toEqual([['web@1.2.4', 1]]);
  });
}
