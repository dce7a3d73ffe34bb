import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { DeployDegradedDataSchema } from '../../schemas/project-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { processed } from '../../test/support/platform.ts';
import { buildsRepository } from '../builds-repository.ts';
import { sweepOnce, type GuardTotals } from './guard-sweep.ts';

/**
 * Guarded rollout (issue 41) through HTTP: the project setting, the sweep judged at chosen instants (an injected clock;
 * the builder's own timer is set far off), the verdict on GET deploy, deploy.degraded delivered signed, the automatic
 * rollback for a project that opted in and none for one that did not, and a manual rollback during the window winning.
 */
const BASE = 'http://console.test:8080';
const MINUTE = 60_000;

describe('guarded rollout', () => {
  let receiver: HttpsReceiver;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    t = await buildTestApi({ processors: true, overrides: { outbound: outbound.guard }, env: { PUBLIC_BASE_URL: BASE, GUARDED_ROLLOUT_SWEEP_MS: '600000' } });
    owner = await signUpAndSignIn(t.app, t.platform);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const session = () => sessionHeaders(owner.cookie);
  const api = async (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) => {
    const res = await t.app.inject({ method, url, headers: session(), ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: res.statusCode, body: res.json() };
  };
  /** The sweep as the builder runs it, at `at`. */
  const sweepAt = (at: number) => sweepOnce({ ...t.platform, clock: { now: () => at } }, t.platform.logger);
  const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);

  /** A project with a webhook endpoint for deploy.*, v1 live since `liveAt - 30 min` and v2 live since `liveAt`. */
  async function projectWithTwoDeploys(setting: Record<string, unknown>, liveAt: number) {
    const p = await createProject(t.app, owner.cookie, { environmentHosts: { production: ['app.example.com'] } });
    const patched = await api('PATCH', `/v1/projects/${p.slug}`, { guardedRollout: setting });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const ep = await api('POST', `/v1/projects/${p.slug}/webhooks`, { url: receiver.url.replace(/\/hook$/, `/${p.slug}`), events: ['deploy.*'] });
    expect(ep.status, JSON.stringify(ep.body)).toBe(201);
    const deploy = async (at: number) => {
      const id = newId('dep_');
      await t.platform.db.query(
        `INSERT INTO deploys (id, project_id, branch, environment, status, trigger_kind, created_at, started_at, finished_at, live_at, artifact_dir)
         VALUES ($1, $2, 'main', 'production', 'ready', 'api', $3, $3, $3, $3, $4)`,
        [id, p.id, new Date(at), `artifacts/${id}`],
      );
      await t.platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.id, id]);
      return id;
    };
    const v1 = await deploy(liveAt - 30 * MINUTE);
    const v2 = await deploy(liveAt);
    return { slug: p.slug, id: p.id, v1, v2, secret: ep.body.endpoint.secret as string, path: `/${p.slug}` };
  }

  /** `n` error events naming `deployId` (null: from a production page naming none), received at `at`. */
  async function errors(projectId: string, deployId: string | null, n: number, at: number, name = 'TypeError') {
    const events = Array.from({ length: n }, () => event(deployId ? { name, deployId } : { name }));
    const from = deployId ? { originHost: null } : {}; // else the project's production host, app.example.com
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: projectId, value: encodeErrorBatchV1(batch(projectId, events, { ...from, receivedAt: at })) }]);
    await processed(t.platform);
  }

  const guardOf = async (slug: string, deployId: string) => {
    const res = await api('GET', `/v1/projects/${slug}/deploys/${deployId}`);
    expect(res.status).toBe(200);
    return res.body.deploy.guard;
  };
  const liveOf = async (slug: string) => (await api('GET', `/v1/projects/${slug}`)).body.project.deploys.live.id as string;
  const logOf = async (slug: string, deployId: string) =>
    ((await api('GET', `/v1/projects/${slug}/deploys/${deployId}/logs`)).body.lines as Array<{ line: string }>).map((l) => l.line);

  it("the setting: defaults shown, fields patched one by one, bounds refused with the spec's 400", async () => {
    const p = await createProject(t.app, owner.cookie);
    const shown = await api('GET', `/v1/projects/${p.slug}`);
    expect(shown.body.project.guardedRollout).toEqual({
      enabled: true,
      autoRollback: false,
      windowMinutes: 10,
      thresholds: { newIssues: 3, newIssuesMargin: 2, errorRateFactor: 2, minErrorEvents: 10, crashFreeDropPoints: 5, minSessions: 20 },
    });
    const a = await api('PATCH', `/v1/projects/${p.slug}`, { guardedRollout: { autoRollback: true, thresholds: { minErrorEvents: 50 } } });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    const b = await api('PATCH', `/v1/projects/${p.slug}`, { guardedRollout: { windowMinutes: 3, thresholds: { newIssues: 5 } } });
    expect(b.body.project.guardedRollout).toMatchObject({
      enabled: true,
      autoRollback: true,
      windowMinutes: 3,
      thresholds: { newIssues: 5, minErrorEvents: 50, errorRateFactor: 2 },
    });
    for (const bad of [
      { windowMinutes: 61 },
      { windowMinutes: 0 },
      { windowMinutes: 1.5 },
      { thresholds: { minErrorEvents: 0 } },
      { thresholds: { errorRateFactor: 1e9 } },
      { thresholds: { unknown: 1 } },
      { rollbackTo: 'dep_x' },
      { enabled: 'yes' },
    ]) {
      const res = await api('PATCH', `/v1/projects/${p.slug}`, { guardedRollout: bad });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    expect((await api('GET', `/v1/projects/${p.slug}`)).body.project.guardedRollout.windowMinutes).toBe(3);
  });

  it('a healthy deploy is watched, then marked healthy at the window end, and stays live', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({ autoRollback: true, windowMinutes: 5 }, liveAt);
    // The previous deploy had its share of errors; this one has fewer.
    await errors(p.id, p.v1, 12, liveAt - 29 * MINUTE);
    await errors(p.id, p.v2, 3, liveAt + MINUTE);
    expect((await sweepAt(liveAt + 2 * MINUTE)).get(p.v2)).toBe('watching');
    expect(await guardOf(p.slug, p.v2)).toMatchObject({ status: 'watching', decidedAt: null, evidence: { current: { errorEvents: 3 }, reasons: [] } });
    expect((await sweepAt(liveAt + 5 * MINUTE + 1000)).get(p.v2)).toBe('healthy');
    const guard = await guardOf(p.slug, p.v2);
    expect(guard).toMatchObject({ status: 'healthy', evidence: { current: { errorEvents: 3, newIssues: 0 }, previous: { deployId: p.v1, errorEvents: 12 } } });
    expect(guard.decidedAt).not.toBeNull();
    expect(await liveOf(p.slug)).toBe(p.v2);
    // Judged once: a later sweep leaves it alone.
    expect((await sweepAt(liveAt + 6 * MINUTE)).has(p.v2)).toBe(false);
    expect(requestsTo(p.path).filter((r) => JSON.parse(r.body).event === 'deploy.degraded')).toHaveLength(0);
  });

  it('a degraded deploy of a project that opted in is rolled back within its first minute: deploy.degraded signed, the log and GET deploy say why', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({ autoRollback: true }, liveAt);
    await errors(p.id, p.v1, 2, liveAt - 29 * MINUTE);
    await errors(p.id, p.v2, 12, liveAt + 20_000, 'PageCrash');
    expect((await sweepAt(liveAt + 45_000)).get(p.v2)).toBe('rolled_back');
    expect(await liveOf(p.slug)).toBe(p.v1);

    const guard = await guardOf(p.slug, p.v2);
    expect(guard.status).toBe('rolled_back');
    expect(guard.evidence).toMatchObject({ rolledBackTo: p.v1, current: { errorEvents: 12, newIssues: 1 }, previous: { deployId: p.v1 } });
    expect(guard.evidence.reasons.join(' ')).toMatch(/12 error events/);
    expect((await logOf(p.slug, p.v2)).at(-1)).toMatch(new RegExp(`^guarded rollout: rolled back automatically to ${p.v1}: 12 error events`));

    await expect.poll(() => requestsTo(p.path).some((r) => JSON.parse(r.body).event === 'deploy.degraded'), { timeout: 15_000 }).toBe(true);
    const delivered = requestsTo(p.path).find((r) => JSON.parse(r.body).event === 'deploy.degraded')!;
    const payload = verifyWebhook<Record<string, unknown>>(delivered.body, delivered.headers['service-signature'] as string, p.secret);
    const data = DeployDegradedDataSchema.parse(payload.data);
    expect(data).toMatchObject({ deployId: p.v2, rolledBack: true, rolledBackTo: p.v1, environment: 'production' });
    expect(data.url).toBe(`${BASE}/projects/${p.slug}/deploys/${p.v2}`);
    expect(delivered.headers['service-webhook-event']).toBe('deploy.degraded');

    // Judged once, sent once, however many sweeps run.
    expect((await sweepAt(liveAt + 60_000)).has(p.v2)).toBe(false);
    await processed(t.platform);
    expect(requestsTo(p.path).filter((r) => JSON.parse(r.body).event === 'deploy.degraded')).toHaveLength(1);
  });

  it('a verdict whose follow-through failed midway is finished by a sweep a minute later: rolled back, sent and logged once', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({ autoRollback: true }, liveAt);
    await errors(p.id, p.v2, 12, liveAt + 10_000, 'MidwayCrash');
    const degraded = () => requestsTo(p.path).filter((r) => JSON.parse(r.body).event === 'deploy.degraded');
    const rolledBackLines = async () => (await logOf(p.slug, p.v2)).filter((l) => l.startsWith('guarded rollout: rolled back automatically')).length;
    // The builder that takes the verdict cannot move the live deploy (its database connection fails there) ...
    const db = t.platform.db;
    const failingRollback = new Proxy(db, {
      get(target, prop) {
        if (prop === 'query')
          return (sql: string, params?: unknown[]) => {
            if (sql.startsWith('UPDATE projects SET live_deploy_id')) return Promise.reject(new Error('connection lost'));
            return target.query(sql, params);
          };
        const v = Reflect.get(target, prop);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const first = await sweepOnce({ ...t.platform, db: failingRollback, clock: { now: () => liveAt + 30_000 } }, t.platform.logger);
    expect(first.has(p.v2)).toBe(false);
    expect(await guardOf(p.slug, p.v2)).toMatchObject({ status: 'degraded' });
    expect(await liveOf(p.slug)).toBe(p.v2);
    // ... nor does a sweep inside its minute take it over ...
    expect((await sweepAt(liveAt + 80_000)).has(p.v2)).toBe(false);
    expect(await liveOf(p.slug)).toBe(p.v2);
    // ... after it, one does: rolled back, deploy.degraded and the log line.
    expect((await sweepAt(liveAt + 91_000)).get(p.v2)).toBe('rolled_back');
    expect(await liveOf(p.slug)).toBe(p.v1);
    expect(await guardOf(p.slug, p.v2)).toMatchObject({ status: 'rolled_back', evidence: { rolledBackTo: p.v1 } });
    await expect.poll(() => degraded().length, { timeout: 15_000 }).toBe(1);
    expect(await rolledBackLines()).toBe(1);

    // The publish failing next (the bus down): the rollback is not made again, deploy.degraded goes once, one log line.
    const q = await projectWithTwoDeploys({ autoRollback: true }, liveAt);
    await errors(q.id, q.v2, 12, liveAt + 10_000, 'MidwayCrash');
    const bus = t.platform.bus;
    const busDown = { ...bus, publish: () => Promise.reject(new Error('bus down')) } as typeof bus;
    expect((await sweepOnce({ ...t.platform, bus: busDown, clock: { now: () => liveAt + 30_000 } }, t.platform.logger)).has(q.v2)).toBe(false);
    expect(await liveOf(q.slug)).toBe(q.v1);
    expect((await sweepAt(liveAt + 91_000)).get(q.v2)).toBe('rolled_back');
    await expect.poll(() => requestsTo(q.path).filter((r) => JSON.parse(r.body).event === 'deploy.degraded').length, { timeout: 15_000 }).toBe(1);
    expect((await logOf(q.slug, q.v2)).filter((l) => l.startsWith('guarded rollout: rolled back automatically'))).toHaveLength(1);
    // Finished: later sweeps leave both alone.
    const later = await sweepAt(liveAt + 200_000);
    expect(later.has(p.v2) || later.has(q.v2)).toBe(false);
    await processed(t.platform);
    expect(degraded()).toHaveLength(1);
  });

  it('a degraded deploy of a project that did not opt in stays live; deploy.degraded says it was not rolled back', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({}, liveAt);
    // Three new issues, few events each: the new-issues threshold alone.
    for (const name of ['AError', 'BError', 'CError']) await errors(p.id, p.v2, 1, liveAt + 10_000, name);
    // The verdicts are counted (GET /metrics), a degraded one by why it was not rolled back.
    const totals: GuardTotals = { healthy: 0, rolled_back: 0, superseded: 0, degraded: {} };
    expect((await sweepOnce({ ...t.platform, clock: { now: () => liveAt + 30_000 } }, t.platform.logger, totals)).get(p.v2)).toBe('degraded');
    expect(totals.degraded).toEqual({ not_opted_in: 1 });
    expect(await liveOf(p.slug)).toBe(p.v2);
    const guard = await guardOf(p.slug, p.v2);
    expect(guard).toMatchObject({ status: 'degraded', evidence: { current: { newIssues: 3, errorEvents: 3 }, rolledBackTo: null } });
    expect(guard.evidence.reasons).toEqual([expect.stringMatching(/^3 new issues/)]);
    expect(guard.evidence.note).toMatch(/did not opt in/);
    await expect.poll(() => requestsTo(p.path).some((r) => JSON.parse(r.body).event === 'deploy.degraded'), { timeout: 15_000 }).toBe(true);
    const delivered = requestsTo(p.path).find((r) => JSON.parse(r.body).event === 'deploy.degraded')!;
    const data = DeployDegradedDataSchema.parse(
      verifyWebhook<Record<string, unknown>>(delivered.body, delivered.headers['service-signature'] as string, p.secret).data,
    );
    expect(data).toMatchObject({ deployId: p.v2, rolledBack: false, rolledBackTo: null });
  });

  it("events from a production page that names no deploy count for the deploy live when they came (the pipeline's rule)", async () => {
    // v2 went live a moment ago (the pipeline names a production page's events for the live deploy built before them).
    const liveAt = Date.now() - 5_000;
    const p = await projectWithTwoDeploys({}, liveAt);
    await errors(p.id, null, 11, Date.now());
    const outcome = await sweepAt(Date.now() + 1_000);
    expect(outcome.get(p.v2)).toBe('degraded');
    expect(await guardOf(p.slug, p.v2)).toMatchObject({
      evidence: { current: { errorEvents: 11, newIssues: 1 }, previous: { deployId: p.v1, errorEvents: 0 } },
    });
  });

  it('crash-free sessions (release health) under the threshold degrade a deploy on their own', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({}, liveAt);
    // 25 sessions of v2 as the release-health pipeline stores them (init updates, 5 of them crashed), none of v1.
    const at = new Date(liveAt + 20_000).toISOString().replace('T', ' ').replace('Z', '');
    await t.platform.analytics.insert(
      'release_sessions',
      Array.from({ length: 25 }, (_, i) => ({
        project_id: p.id,
        environment: 'production',
        deploy_id: p.v2,
        release: p.v2,
        batch_id: `b-${p.v2}`,
        item: i,
        kind: 'update',
        session_id: `s${i}`,
        distinct_id: '',
        started: 1,
        crashed: i < 5 ? 1 : 0,
        unhandled: 0,
        errored: i < 5 ? 1 : 0,
        abnormal: 0,
        exited: i < 5 ? 0 : 1,
        bucket: at.slice(0, 16) + ':00',
        received_at: at,
      })),
    );
    expect((await sweepAt(liveAt + 60_000)).get(p.v2)).toBe('degraded');
    const guard = await guardOf(p.slug, p.v2);
    expect(guard.evidence.current).toMatchObject({ sessions: 25, crashFreeSessions: 0.8, errorEvents: 0 });
    expect(guard.evidence.reasons).toEqual([expect.stringMatching(/^crash-free sessions 80% of 25 \(100% in the previous deploy's same span/)]);
  });

  it('a manual rollback during the window wins: the deploy is superseded, not judged, and nothing is rolled back again', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({ autoRollback: true }, liveAt);
    await errors(p.id, p.v2, 15, liveAt + 10_000);
    expect((await api('POST', `/v1/projects/${p.slug}/deploys/${p.v1}/rollback`)).status).toBe(200);
    expect((await sweepAt(liveAt + 30_000)).get(p.v2)).toBe('superseded');
    expect(await liveOf(p.slug)).toBe(p.v1);
    expect((await guardOf(p.slug, p.v2)).status).toBe('superseded');
    await processed(t.platform);
    expect(requestsTo(p.path).filter((r) => JSON.parse(r.body).event === 'deploy.degraded')).toHaveLength(0);
  });

  it('a finished production deploy is live the instant it is ready: a sweep between any two statements of the finish never calls it superseded', async () => {
    const p = await projectWithTwoDeploys({ autoRollback: true }, Date.now() - 20 * MINUTE);
    const id = newId('dep_');
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, environment, status, trigger_kind, created_at, started_at, lease_owner, lease_until)
       VALUES ($1, $2, 'main', 'production', 'building', 'api', now(), now(), 'builder-1', now() + interval '1 minute')`,
      [id, p.id],
    );
    // The builder's finish, with the builder's sweep (GUARDED_ROLLOUT_SWEEP_MS) run after each statement it sends.
    const seen: Array<string | undefined> = [];
    const db = t.platform.db;
    const sweepingDb = {
      async query(...args: Parameters<typeof db.query>) {
        const r = await db.query(...args);
        seen.push((await sweepAt(Date.now())).get(id));
        return r;
      },
    } as typeof db;
    const finished = await buildsRepository.finish(sweepingDb, 'builder-1', id, { status: 'ready', artifactDir: `artifacts/${id}` }, Date.now(), 0);
    expect(finished?.id).toBe(id);
    expect(seen).not.toContain('superseded');
    expect(seen.at(-1)).toBe('watching');
    expect(await liveOf(p.slug)).toBe(id);
    expect((await guardOf(p.slug, id)).status).toBe('watching');
  });

  it('a project with guarded rollout off is not watched', async () => {
    const liveAt = Date.now() - 20 * MINUTE;
    const p = await projectWithTwoDeploys({ enabled: false, autoRollback: true }, liveAt);
    await errors(p.id, p.v2, 15, liveAt + 10_000);
    expect((await sweepAt(liveAt + 30_000)).get(p.v2)).toBe('disabled');
    expect(await guardOf(p.slug, p.v2)).toBeNull();
    expect(await liveOf(p.slug)).toBe(p.v2);
  });
});
