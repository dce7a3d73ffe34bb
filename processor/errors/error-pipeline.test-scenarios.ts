import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import type { MailMessage, Mailer } from '../../platform/ports/mailer.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import { AnalyticalQueryError } from '../../platform/ports/analytical-store.ts';
import { encodeErrorBatchEnvelope, encodeErrorBatchV1, TOPIC as ERROR_EVENTS } from '../../schemas/bus/error-events.ts';
import { ERROR_EVENT_TEXT_FIELD_NAMES, type StampedErrorBatch, type StampedErrorEvent } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed, type TestPlatformOptions } from '../../test/support/platform.ts';
import { createErrorPipeline } from './error-pipeline.ts';
import { startErrorConsumer, type ErrorConsumer } from './error-consumer.ts';
import { replayUnprocessable } from './unprocessable-replay.ts';
import { unprocessableRepository } from './repositories/unprocessable-repository.ts';
import { pruneConsumedLedger } from './ledger-retention.ts';
import type { ErrorCaps } from './steps/caps-step.ts';
import { inertMailer } from '../../test/support/stubs.ts';

/**
 * The error pipeline's behaviour, run by error-pipeline.test.ts (embedded: PGlite, chDB,
 * in-process bus) and error-pipeline.int.test.ts (Postgres, Kafka, ClickHouse over HTTP).
 * Messages go straight onto the bus as the edge puts them (envelope v2 around a client body, see
 * busMessage); results are read from the stores.
 */
const POISON_MARKER = 'poison-for-the-store';

export const TEST_CAPS: ErrorCaps = { productionPerMonth: 30, previewPerMonth: 4, openGroupsPerEnvironment: 3 };
const PROD_HOST = 'app.example.com';
const PREVIEW_HOST = 'pr-7.preview.example.com';

export interface Harness {
  platform: Platform;
  app: FastifyInstance;
  cookie: string;
  clock: ManualClock;
  mails: MailMessage[];
  /** Make the mailer fail (true) or work again. */
  failMail(fail: boolean): void;
  newProject(): Promise<{ id: string; slug: string }>;
  /** Publish and resolve once the pipeline has processed the message (and everything before it). */
  publish(msg: StampedErrorBatch): Promise<void>;
  /** Publish raw bytes on the pipeline's topic (resolves once published). */
  publishRaw(key: string, value: Buffer): Promise<void>;
  consumer: ErrorConsumer;
  /** Make the stand-in store refuse poisoned rows (true, the default) or take them (false). */
  poisonRefused(refused: boolean): void;
  close(): Promise<void>;
}

export async function createHarness(opts: { real?: TestPlatformOptions['real'] } = {}): Promise<Harness> {
  const clock = new ManualClock();
  const mails: MailMessage[] = [];
  let failing = false;
  const mailer: Mailer = {
    adapter: 'file',
    async send(m) {
      if (failing) throw new Error('smtp down');
      mails.push(m);
    },
    async close() {},
  };
  // Bus names of this run's own: runs sharing one Kafka cluster never take each other's batches.
  const api = await buildTestApi({ real: opts.real, env: { BUS_NAME_SUFFIX: `.errors-test.${randomUUID()}` }, overrides: { clock, mailer } });
  // A stand-in for a row no store will take: occurrence rows whose message holds POISON_MARKER are refused
  // the way ClickHouse refuses a row it cannot parse (not retryable).
  const insert = api.platform.analytics.insert.bind(api.platform.analytics);
  let refusePoison = true;
  api.platform.analytics.insert = async (table, rows, o) => {
    if (refusePoison && rows.some((r) => String(r.message).includes(POISON_MARKER)))
      throw new AnalyticalQueryError(27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'test: a row the store cannot read');
    return insert(table, rows, o);
  };
  const sub = await startErrorConsumer(api.platform, { caps: TEST_CAPS });
  const user = await signUpAndSignIn(api.app, api.platform);
  const newProject = async () => {
    const p = await createProject(api.app, user.cookie, { environmentHosts: { production: [PROD_HOST], preview: ['*.preview.example.com'] } });
    return { id: p.id, slug: p.slug };
  };
  const sentinelProject = await newProject();
  const kafka = api.platform.bus.adapter === 'kafka';
  return {
    platform: api.platform,
    app: api.app,
    cookie: user.cookie,
    clock,
    mails,
    failMail: (f) => (failing = f),
    newProject,
    consumer: sub,
    poisonRefused: (r) => (refusePoison = r),
    publishRaw: (key, value) => api.platform.bus.publish(ERROR_EVENTS, [{ key, value }]),
    async publish(msg) {
      await api.platform.bus.publish(ERROR_EVENTS, [{ key: msg.projectId, value: busMessage(msg) }]);
      // Embedded: the bus says when its consumers caught up to its log's end.
      if (!kafka) return processed(api.platform);
      // Kafka: a sentinel on the same partition (same key) is fetched after `msg`, so once the
      // sentinel's ledger row is committed, `msg` has reached the handler. With two batches in flight
      // (the pipeline's default) the sentinel's transaction may still commit before msg's, so then
      // wait for a ledger row of each of msg's events (every event the stores take gets one, whatever
      // its outcome; events the stand-in store refuses never do, and are not waited for), and for the
      // occurrence rows of its accepted events (written right after that commit).
      const sentinel = batch(sentinelProject.id, [event({ message: 'sentinel' })], { originHost: null });
      await api.platform.bus.publish(ERROR_EVENTS, [{ key: msg.projectId, value: busMessage(sentinel) }]);
      const sentinelId = sentinel.events[0]!.eventId;
      const db = api.platform.db;
      await vi.waitFor(async () => expect((await db.query('SELECT 1 FROM error_events_consumed WHERE event_id = $1', [sentinelId])).rows).toHaveLength(1), {
        timeout: 30_000,
        interval: 50,
      });
      const storable = msg.events.filter((e) => !e.message.includes(POISON_MARKER)).map((e) => e.eventId);
      await vi.waitFor(
        async () =>
          expect((await db.query('SELECT event_id FROM error_events_consumed WHERE event_id = ANY($1::text[])', [storable])).rows).toHaveLength(
            new Set(storable).size,
          ),
        { timeout: 30_000, interval: 50 },
      );
      const accepted = (
        await db.query<{ event_id: string }>(`SELECT event_id FROM error_events_consumed WHERE event_id = ANY($1::text[]) AND outcome = 'accepted'`, [storable])
      ).rows.map((r) => r.event_id);
      if (accepted.length) {
        await vi.waitFor(async () => expect(await occurrenceCount(api.platform.analytics, { eventIds: accepted })).toBe(accepted.length), {
          timeout: 30_000,
          interval: 50,
        });
      }
    },
    async close() {
      await sub.stop();
      await api.close();
    },
  };
}

let seq = 0;
export function event(over: Partial<StampedErrorEvent> = {}): StampedErrorEvent {
  return {
    eventId: randomUUID(),
    name: 'TypeError',
    message: "Cannot read properties of undefined (reading 'id')",
    stack: `TypeError: x\n    at loadUser (https://${PROD_HOST}/assets/users.js:12:5)\n    at dispatch (https://${PROD_HOST}/node_modules/react/index.js:1:1)`,
    runtime: 'browser',
    path: '/account',
    truncated: [],
    clientTime: Date.UTC(2026, 10, 21, 11, 59, 0) + seq++,
    ...over,
  };
}

export function batch(
  projectId: string,
  events: StampedErrorEvent[],
  opts: { originHost?: string | null; receivedAt?: number; userAgent?: string } = {},
): StampedErrorBatch {
  const b: StampedErrorBatch = {
    projectId,
    originHost: opts.originHost === undefined ? PROD_HOST : opts.originHost,
    receivedAt: opts.receivedAt ?? Date.UTC(2026, 10, 21, 12, 0, 0) + seq++,
    events,
  };
  if (opts.userAgent !== undefined) b.userAgent = opts.userAgent;
  return b;
}

/**
 * The bus message the edge would publish for this batch: its events as the client body they came from, in
 * the edge's v2 envelope with the same event ids, so the consumer stamps them as in production. A batch
 * larger than a client may send (more than LIMITS.errorBatch.maxEvents) can only come from a producer that
 * stamps events itself, so it goes as v1.
 */
export function busMessage(b: StampedErrorBatch): Buffer {
  if (b.events.length > LIMITS.errorBatch.maxEvents) return encodeErrorBatchV1(b);
  const body = {
    batch: b.events.map((e) => {
      const client: Record<string, unknown> = { name: e.name, message: e.message, stack: e.stack, runtime: e.runtime };
      for (const f of ERROR_EVENT_TEXT_FIELD_NAMES) if (e[f] !== undefined) client[f] = e[f];
      if (e.extra !== undefined) client.extra = e.extra;
      if (e.clientTime !== undefined) client.timestamp = e.clientTime;
      if ('environment' in e) client.environment = (e as { environment?: unknown }).environment;
      // The context (issue 40) as the client's fields it was stamped from.
      if (e.context) {
        const { clientEnvironment, ...fields } = e.context;
        Object.assign(client, fields);
        if (clientEnvironment !== undefined) client.environment = clientEnvironment;
      }
      return client;
    }),
  };
  const defaultRuntime = b.originHost ? 'browser' : 'node';
  return encodeErrorBatchEnvelope(
    {
      projectId: b.projectId,
      originHost: b.originHost,
      receivedAt: b.receivedAt,
      defaultRuntime,
      eventIds: b.events.map((e) => e.eventId),
      userAgent: b.userAgent,
    },
    Buffer.from(JSON.stringify(body)),
  );
}

export async function groupsOf(platform: Platform, projectId: string) {
  const r = await platform.db.query<{
    id: string;
    fingerprint: string;
    name: string;
    message: string;
    status: string;
    count: string | number;
    env_counts: Record<string, number>;
    regression_count: number;
    samples: Array<Record<string, unknown>>;
    suggestion: string;
    culprit: string | null;
    stack: string;
  }>('SELECT * FROM error_groups_with_samples WHERE project_id = $1 ORDER BY count DESC, id', [projectId]);
  return r.rows.map((g) => ({ ...g, count: Number(g.count) }));
}

export async function occurrenceCount(analytics: AnalyticalStore, where: { projectId?: string; eventIds?: string[] }, final = true): Promise<number> {
  const conds: string[] = [];
  const params: Record<string, unknown> = {};
  if (where.projectId) {
    conds.push('project_id = {projectId:String}');
    params.projectId = where.projectId;
  }
  if (where.eventIds) {
    conds.push('event_id IN {ids:Array(String)}');
    params.ids = where.eventIds;
  }
  const rows = await analytics.query<{ n: number | string }>(
    `SELECT count() AS n FROM error_occurrences ${final ? 'FINAL' : ''} WHERE ${conds.join(' AND ') || '1'}`,
    params,
  );
  return Number(rows[0]?.n ?? 0);
}

export function defineErrorPipelineScenarios(real?: TestPlatformOptions['real']): void {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ real });
  });
  afterAll(async () => {
    await h?.close();
  });

  it('groups events by fingerprint; messages differing only in numbers are one issue', async () => {
    const p = await h.newProject();
    const e1 = event({ message: 'User 1 not found', name: 'NotFoundError' });
    const e2 = event({ message: 'User 98765 not found', name: 'NotFoundError', stack: e1.stack.replace(':12:5', ':40:9') });
    const e3 = event();
    await h.publish(batch(p.id, [e1, e2, e3]));
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.map((g) => [g.name, g.count])).toEqual([
      ['NotFoundError', 2],
      ['TypeError', 1],
    ]);
    const g = groups[0]!;
    expect(g.id).toMatch(/^grp_[0-9a-f]{24}$/);
    expect(g.status).toBe('unresolved');
    expect(g.env_counts).toEqual({ production: 2 });
    expect(g.samples.map((s) => s.eventId)).toEqual([e2.eventId, e1.eventId]);
    expect(g.samples[0]).toMatchObject({ environment: 'production', path: '/account', runtime: 'browser', originHost: PROD_HOST });
    expect(g.culprit).toBe(`loadUser (https://${PROD_HOST}/assets/users.js:40:9)`);
    expect(groups[1]!.suggestion).toMatch(/^Hint, not a diagnosis: .*'id'.*Start at loadUser/);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(3);
    const rows = await h.platform.analytics.query<{ group_id: string; environment: string }>(
      'SELECT group_id, environment FROM error_occurrences FINAL WHERE event_id = {id:String}',
      { id: e1.eventId },
    );
    expect(rows).toEqual([{ group_id: g.id, environment: 'production' }]);
  });

  it("adds each batch to an existing group's counts per environment", async () => {
    const p = await h.newProject();
    const msg = { message: 'counted across batches' };
    await h.publish(batch(p.id, [event(msg), event(msg)]));
    await h.publish(batch(p.id, [event(msg)], { originHost: 'pr-7.preview.example.com' }));
    await h.publish(batch(p.id, [event(msg)]));
    const [g] = await groupsOf(h.platform, p.id);
    expect(g!.count).toBe(4);
    expect(g!.env_counts).toEqual({ production: 3, preview: 1 });
  });

  it('keeps a ring of the 20 most recent samples, newest first', async () => {
    const p = await h.newProject();
    const events = Array.from({ length: 25 }, (_, i) => event({ message: `Timeout after ${i} ms` }));
    await h.publish(batch(p.id, events.slice(0, 15)));
    await h.publish(batch(p.id, events.slice(15)));
    const [g] = await groupsOf(h.platform, p.id);
    expect(g!.count).toBe(25);
    expect(g!.samples).toHaveLength(20);
    expect(g!.samples.map((s) => s.eventId)).toEqual(
      events
        .slice(5)
        .reverse()
        .map((e) => e.eventId),
    );
  });

  it('forgets consumed event ids after the retention window, in batches, and keeps newer ones', async () => {
    const p = await h.newProject();
    const recent = event({ message: 'recently consumed' });
    await h.publish(batch(p.id, [recent]));
    const old = [randomUUID(), randomUUID(), randomUUID()];
    await h.platform.db.query(
      `INSERT INTO error_events_consumed (event_id, project_id, outcome, consumed_at) SELECT id, $2, 'accepted', now() - interval '8 days' FROM unnest($1::text[]) AS id`,
      [old, p.id],
    );
    const removed = await pruneConsumedLedger(h.platform.db, { keepMs: 7 * 24 * 3600 * 1000, batchSize: 2 });
    expect(removed).toBeGreaterThanOrEqual(3);
    const left = await h.platform.db.query<{ event_id: string }>('SELECT event_id FROM error_events_consumed WHERE event_id = ANY($1::text[])', [
      [...old, recent.eventId],
    ]);
    expect(left.rows.map((r) => r.event_id)).toEqual([recent.eventId]);
  });

  it('keeps the ring right when one batch brings more occurrences than it holds', async () => {
    const p = await h.newProject();
    const events = Array.from({ length: 26 }, (_, i) => event({ message: `Timeout after ${i} ms` }));
    await h.publish(batch(p.id, events.slice(0, 3)));
    await h.publish(batch(p.id, events.slice(3)));
    const [g] = await groupsOf(h.platform, p.id);
    expect(g!.count).toBe(26);
    expect(g!.samples.map((s) => s.eventId)).toEqual(
      events
        .slice(6)
        .reverse()
        .map((e) => e.eventId),
    );
    // The second batch's slot holds a whole ring by itself, so the first batch's slot is gone.
    const slots = await h.platform.db.query<{ seq: string | number }>('SELECT seq FROM error_group_samples WHERE group_id = $1', [g!.id]);
    expect(slots.rows.map((r) => Number(r.seq))).toEqual([2]);
  });

  it('keeps the 20 most recent samples when many small batches wrap the ring, writing one slot per batch', async () => {
    const p = await h.newProject();
    // 28 occurrences (under the harness's small production cap) in 24 batches of 1 or 2, so slots wrap.
    const events = Array.from({ length: 28 }, (_, i) => event({ message: `Timeout after ${i} ms` }));
    let batches = 0;
    for (let i = 0; i < events.length; batches++) {
      const n = i % 7 === 0 ? 2 : 1;
      await h.publish(batch(p.id, events.slice(i, i + n)));
      i += n;
    }
    expect(batches).toBeGreaterThan(20);
    const [g] = await groupsOf(h.platform, p.id);
    expect(g!.count).toBe(28);
    expect(g!.samples.map((s) => s.eventId)).toEqual(
      events
        .slice(8)
        .reverse()
        .map((e) => e.eventId),
    );
    const slots = await h.platform.db.query<{ n: string | number }>('SELECT count(*) AS n FROM error_group_samples WHERE group_id = $1', [g!.id]);
    expect(Number(slots.rows[0]!.n)).toBe(20);
  });

  it('stamps the environment on the server: origin domains, then deploy id, then git sha', async () => {
    const p = await h.newProject();
    await h.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, git_sha, environment) VALUES ($1, $2, 'main', 'aaa111', 'production'), ($3, $2, 'feat', 'bbb222', 'preview')`,
      [`dep_${randomUUID().slice(0, 8)}p`, p.id, `dep_${randomUUID().slice(0, 8)}v`],
    );
    const deploys = (await h.platform.db.query<{ id: string; environment: string }>('SELECT id, environment FROM deploys WHERE project_id = $1', [p.id])).rows;
    const prodDeploy = deploys.find((d) => d.environment === 'production')!.id;
    const msg = (name: string, over: Partial<StampedErrorEvent>, originHost: string | null) =>
      batch(p.id, [event({ name, message: name, environment: 'production', ...over } as Partial<StampedErrorEvent>)], { originHost });
    await h.publish(msg('FromPreviewOrigin', {}, PREVIEW_HOST));
    await h.publish(msg('FromOtherOrigin', {}, 'localhost:3000'));
    await h.publish(msg('ByDeployId', { deployId: prodDeploy }, null));
    await h.publish(msg('BySha', { gitSha: 'BBB222' }, null));
    await h.publish(msg('Unproven', { deployId: 'dep_nope' }, null));
    const envs = Object.fromEntries((await groupsOf(h.platform, p.id)).map((g) => [g.name, Object.keys(g.env_counts)]));
    expect(envs).toEqual({
      FromPreviewOrigin: ['preview'],
      FromOtherOrigin: ['unknown'],
      ByDeployId: ['production'],
      BySha: ['preview'],
      Unproven: ['unknown'],
    });
  });

  it('follows the state table: resolved + occurrence = regression; ignored keeps counting', async () => {
    const p = await h.newProject();
    const a = event({ name: 'AError' });
    const b = event({ name: 'BError' });
    await h.publish(batch(p.id, [a, b]));
    let groups = await groupsOf(h.platform, p.id);
    const idA = groups.find((g) => g.name === 'AError')!.id;
    const idB = groups.find((g) => g.name === 'BError')!.id;
    await h.platform.db.query(`UPDATE error_groups SET status = 'resolved' WHERE id = $1`, [idA]);
    await h.platform.db.query(`UPDATE error_groups SET status = 'ignored' WHERE id = $1`, [idB]);
    await h.publish(batch(p.id, [event({ name: 'AError' }), event({ name: 'AError' }), event({ name: 'BError' })]));
    groups = await groupsOf(h.platform, p.id);
    const A = groups.find((g) => g.id === idA)!;
    const B = groups.find((g) => g.id === idB)!;
    expect([A.status, A.count, A.regression_count]).toEqual(['unresolved', 3, 1]);
    expect([B.status, B.count, B.regression_count]).toEqual(['ignored', 2, 0]);
  });

  it('caps occurrences per month and environment, and counts drops by reason', async () => {
    const p = await h.newProject();
    const prod = Array.from({ length: 32 }, (_, i) => event({ message: `Timeout ${i}` }));
    await h.publish(batch(p.id, prod.slice(0, 20)));
    await h.publish(batch(p.id, prod.slice(20)));
    // preview cap 4; unknown counts against the preview cap too, in its own row
    await h.publish(
      batch(
        p.id,
        Array.from({ length: 6 }, () => event({ name: 'PreviewError' })),
        { originHost: PREVIEW_HOST },
      ),
    );
    // a new month starts from zero
    await h.publish(batch(p.id, [event({ name: 'PreviewError' })], { originHost: PREVIEW_HOST, receivedAt: Date.UTC(2026, 11, 1, 0, 0, 1) }));
    const usage = (
      await h.platform.db.query<{ month: string; environment: string; accepted: string | number; dropped: Record<string, number> }>(
        'SELECT month, environment, accepted, dropped FROM error_monthly_usage WHERE project_id = $1 ORDER BY month, environment',
        [p.id],
      )
    ).rows.map((r) => [r.month, r.environment, Number(r.accepted), r.dropped]);
    expect(usage).toEqual([
      ['2026-11', 'preview', 4, { monthly_cap: 2 }],
      ['2026-11', 'production', 30, { monthly_cap: 2 }],
      ['2026-12', 'preview', 1, {}],
    ]);
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.map((g) => [g.name, g.count])).toEqual([
      ['TypeError', 30],
      ['PreviewError', 5],
    ]);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(35);
  });

  it('drops new fingerprints beyond the open-groups cap while existing groups keep counting', async () => {
    const p = await h.newProject();
    const names = ['G1', 'G2', 'G3', 'G4'];
    await h.publish(
      batch(
        p.id,
        names.map((name) => event({ name })),
      ),
    );
    await h.publish(batch(p.id, [event({ name: 'G1' }), event({ name: 'G5' })]));
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.map((g) => [g.name, g.count]).sort()).toEqual([
      ['G1', 2],
      ['G2', 1],
      ['G3', 1],
    ]);
    const usage = await h.platform.db.query<{ accepted: string | number; dropped: Record<string, number> }>(
      'SELECT accepted, dropped FROM error_monthly_usage WHERE project_id = $1',
      [p.id],
    );
    expect(Number(usage.rows[0]!.accepted)).toBe(4);
    expect(usage.rows[0]!.dropped).toEqual({ open_groups_cap: 2 });
    // resolving one frees a slot for a new fingerprint
    await h.platform.db.query(`UPDATE error_groups SET status = 'resolved' WHERE project_id = $1 AND name = 'G3'`, [p.id]);
    await h.publish(batch(p.id, [event({ name: 'G6' })]));
    expect((await groupsOf(h.platform, p.id)).map((g) => g.name).sort()).toEqual(['G1', 'G2', 'G3', 'G6']);
  });

  it('counts a re-delivered batch once and adds no ClickHouse rows', async () => {
    const p = await h.newProject();
    const msg = batch(p.id, [event(), event(), event({ name: 'Other' })]);
    await h.publish(msg);
    await h.publish(msg);
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.map((g) => g.count)).toEqual([2, 1]);
    expect(groups[0]!.samples).toHaveLength(2);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(3);
    const usage = await h.platform.db.query<{ accepted: string }>('SELECT accepted FROM error_monthly_usage WHERE project_id = $1', [p.id]);
    expect(Number(usage.rows[0]!.accepted)).toBe(3);
  });

  it('heals a crash between the Postgres commit and the ClickHouse insert on re-delivery', async () => {
    const p = await h.newProject();
    let failInsert = true;
    const flaky: AnalyticalStore = {
      ...h.platform.analytics,
      async insert(table, rows, o) {
        if (failInsert) throw new Error('clickhouse went away');
        return h.platform.analytics.insert(table, rows, o);
      },
    };
    const pipeline = createErrorPipeline({
      db: h.platform.db,
      analytics: flaky,
      mailer: inertMailer,
      clock: h.clock,
      logger: h.platform.logger,
      publicBaseUrl: 'http://x',
      caps: TEST_CAPS,
    });
    const msg = batch(p.id, [event(), event()]);
    await expect(pipeline.handleBatch([msg])).rejects.toThrow('clickhouse went away');
    expect((await groupsOf(h.platform, p.id))[0]!.count).toBe(2);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(0);
    failInsert = false;
    const summary = await pipeline.handleBatch([msg]);
    expect(summary).toMatchObject({ accepted: 0, duplicates: 2 });
    expect((await groupsOf(h.platform, p.id))[0]!.count).toBe(2);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(2);
    // and once more: still no extra rows, even without FINAL's help from the dedup token
    await pipeline.handleBatch([msg]);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(2);
  });

  it('keeps counts exact when two processors handle overlapping batches at once', async () => {
    const p = await h.newProject();
    const noMail: Mailer = inertMailer;
    const make = () =>
      createErrorPipeline({
        db: h.platform.db,
        analytics: h.platform.analytics,
        mailer: noMail,
        clock: h.clock,
        logger: h.platform.logger,
        publicBaseUrl: 'http://x',
        caps: TEST_CAPS,
      });
    const [p1, p2] = [make(), make()];
    const m1 = batch(p.id, [event(), event({ name: 'Second' })]);
    const m2 = batch(p.id, [event(), event(), event({ name: 'Second' })]);
    const m3 = batch(p.id, [event({ name: 'Third' }), event()]);
    await Promise.all([p1.handleBatch([m1, m2]), p2.handleBatch([m3, m2]), p1.handleBatch([m3])]);
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.map((g) => [g.name, g.count])).toEqual([
      ['TypeError', 4],
      ['Second', 2],
      ['Third', 1],
    ]);
    expect(await occurrenceCount(h.platform.analytics, { projectId: p.id })).toBe(7);
    const usage = await h.platform.db.query<{ accepted: string }>('SELECT accepted FROM error_monthly_usage WHERE project_id = $1', [p.id]);
    expect(Number(usage.rows[0]!.accepted)).toBe(7);
  });

  it('stores an event whose client time no store can hold without that time, and the batch does not stall', async () => {
    const p = await h.newProject();
    // v1 producers' events with client times out of range (no Date holds 1e20; ClickHouse cannot read the
    // year 20000), beside a normal one.
    const far = event({ message: 'far future clock', clientTime: 1e20 });
    const farther = event({ message: 'year 20000 clock', clientTime: Date.UTC(20000, 0, 1) });
    const normal = event({ message: 'normal clock' });
    await h.publish(batch(p.id, [far, farther, normal]));
    await vi.waitFor(async () => expect((await groupsOf(h.platform, p.id)).reduce((n, g) => n + g.count, 0)).toBe(3), { timeout: 30_000, interval: 50 });
    const groups = await groupsOf(h.platform, p.id);
    for (const id of [far.eventId, farther.eventId]) {
      const sample = groups.flatMap((g) => g.samples).find((x) => x.eventId === id)!;
      expect(sample).toBeDefined();
      expect(sample.clientTime).toBeUndefined();
    }
    await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: [far.eventId, farther.eventId, normal.eventId] })).toBe(3), {
      timeout: 30_000,
      interval: 50,
    });
  });

  it('stores events whose text holds NUL characters (Postgres text cannot), and the batch does not stall', async () => {
    const p = await h.newProject();
    const nul = event({
      name: 'Type\u0000Error',
      message: 'bad \u0000 byte',
      stack: `TypeError: x\u0000\n    at f (https://${PROD_HOST}/a.js:1:1)`,
      path: '/p\u0000',
      extra: { 'k\u0000': 'v\u0000' },
    });
    await h.publish(batch(p.id, [nul, event({ message: 'fine' })]));
    await vi.waitFor(async () => expect((await groupsOf(h.platform, p.id)).reduce((n, g) => n + g.count, 0)).toBe(2), { timeout: 30_000, interval: 50 });
    const g = (await groupsOf(h.platform, p.id)).find((x) => x.message.startsWith('bad'))!;
    expect(g.message).toBe('bad \uFFFD byte');
    expect(g.name).toBe('Type\uFFFDError');
    await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: [nul.eventId] })).toBe(1), { timeout: 30_000, interval: 50 });
  });

  it('stores events whose text holds lone UTF-16 surrogates (not valid Unicode), and the batch does not stall', async () => {
    const p = await h.newProject();
    const odd = event({ message: 'half \ud800 pair', stack: `E: x\udc00\n    at f (https://${PROD_HOST}/a.js:1:1)`, extra: { ['k\ud83d']: 'v\udfff' } });
    await h.publish(batch(p.id, [odd, event({ message: 'fine' })]));
    await vi.waitFor(async () => expect((await groupsOf(h.platform, p.id)).reduce((n, g) => n + g.count, 0)).toBe(2), { timeout: 30_000, interval: 50 });
    const g = (await groupsOf(h.platform, p.id)).find((x) => x.message.startsWith('half'))!;
    expect(g.message).toBe('half \uFFFD pair');
    await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: [odd.eventId] })).toBe(1), { timeout: 30_000, interval: 50 });
  });

  it('sets aside an event no store will take, and handles the rest of its batch and the batches after it', async () => {
    const p = await h.newProject();
    const bad = event({ message: `${POISON_MARKER} here` });
    // One issue for the good events (messages differing only in numbers), so the test caps' three open
    // groups leave room.
    const good = [event({ message: 'ordinary 1' }), event({ message: 'ordinary 2' })];
    await h.publish(batch(p.id, [good[0]!, bad, good[1]!]));
    const after = event({ message: 'ordinary 3' });
    await h.publish(batch(p.id, [after]));
    const ids = [...good, after].map((e) => e.eventId);
    await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: ids })).toBe(3), { timeout: 30_000, interval: 50 });
    expect(await occurrenceCount(h.platform.analytics, { eventIds: [bad.eventId] })).toBe(0);
    expect(h.consumer.stats().dropped.unprocessable).toBeGreaterThanOrEqual(1);

    // Kept, scrubbed, where an operator can see it; replayed once the store takes it again.
    const [kept] = await unprocessableRepository.list(h.platform.db, { eventIds: [bad.eventId] });
    expect(kept).toMatchObject({ eventId: bad.eventId, projectId: p.id, attempts: 1 });
    expect(kept!.error).toContain('CANNOT_PARSE_INPUT');
    h.poisonRefused(false);
    try {
      expect(await replayUnprocessable(h.platform, { eventIds: [bad.eventId] })).toEqual({ replayed: 1 });
      await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: [bad.eventId] })).toBe(1), { timeout: 30_000, interval: 50 });
      expect(await unprocessableRepository.list(h.platform.db, { eventIds: [bad.eventId] })).toEqual([]);
    } finally {
      h.poisonRefused(true);
    }
  });

  it('keeps an unprocessable event scrubbed: a secret in it is not stored in the set-aside table either', async () => {
    const p = await h.newProject();
    const bad = event({ message: `${POISON_MARKER} with ghp_abcdefghijklmnopqrstuvwxyz0123456789`, extra: { password: 'hunter2' } });
    await h.publish(batch(p.id, [bad]));
    await vi.waitFor(async () => expect(await unprocessableRepository.list(h.platform.db, { eventIds: [bad.eventId] })).toHaveLength(1), {
      timeout: 30_000,
      interval: 50,
    });
    const [kept] = await unprocessableRepository.list(h.platform.db, { eventIds: [bad.eventId] });
    const text = kept!.message.toString();
    expect(text).toContain(POISON_MARKER);
    expect(text).not.toContain('ghp_abcdefghijklmnopqrstuvwxyz0123456789');
    expect(text).not.toContain('hunter2');
  });

  it('counts every event it does not store by reason, undecodable messages and invalid v1 events too', async () => {
    const p = await h.newProject();
    const before = h.consumer.stats().dropped;
    await h.publishRaw(p.id, Buffer.from('not a batch'));
    const good = event({ message: 'counted' });
    await h.publishRaw(
      p.id,
      encodeErrorBatchV1({ ...batch(p.id, []), events: [good, { ...good, eventId: 'bad-message', message: 42 } as unknown as StampedErrorEvent] }),
    );
    await h.publish(batch(p.id, [event({ message: 'after' })]));
    await vi.waitFor(
      () => {
        const after = h.consumer.stats().dropped;
        expect((after.invalid_message ?? 0) - (before.invalid_message ?? 0)).toBe(1);
        expect((after.invalid_event ?? 0) - (before.invalid_event ?? 0)).toBe(1);
      },
      { timeout: 30_000, interval: 50 },
    );
    await vi.waitFor(async () => expect(await occurrenceCount(h.platform.analytics, { eventIds: [good.eventId] })).toBe(1), { timeout: 30_000, interval: 50 });
  });

  it('never stores secrets: Postgres and ClickHouse get the scrubbed event', async () => {
    const p = await h.newProject();
    const secrets = [
      'hunter2',
      'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
      'sk_live_51Habcdefghijklmnop',
      'AKIAIOSFODNN7EXAMPLE',
      'cx_live_Zm9vYmFyYmF6cXV4',
      'tok-value-123',
    ];
    const e = event({
      message: `login failed for postgres://bob:hunter2@db:5432/app with ghp_abcdefghijklmnopqrstuvwxyz0123456789`,
      stack: `Error: x\n    at pay (https://${PROD_HOST}/assets/pay.js:3:4)\nkey sk_live_51Habcdefghijklmnop`,
      path: '/cb?access_token=tok-value-123',
      extra: {
        aws: 'AKIAIOSFODNN7EXAMPLE',
        nested: { password: 'anything', key: 'cx_live_Zm9vYmFyYmF6cXV4' },
        keep: 'visible',
        'postgres://u:keyname-pw@h/db': 1,
      },
    });
    await h.publish(batch(p.id, [e]));
    const pgText = JSON.stringify((await h.platform.db.query('SELECT * FROM error_groups_with_samples WHERE project_id = $1', [p.id])).rows);
    const chText = JSON.stringify(await h.platform.analytics.query('SELECT * FROM error_occurrences FINAL WHERE project_id = {p:String}', { p: p.id }));
    for (const s of [...secrets, 'anything', 'keyname-pw']) {
      expect(pgText).not.toContain(s);
      expect(chText).not.toContain(s);
    }
    expect(pgText).toContain('visible');
    expect(chText).toContain('[Filtered]');
    expect(pgText).toContain(`/assets/pay.js:3:4`);
  });

  it('alerts on a new production issue and on regressions, at most once per 6 hours, never for ignored or non-production', async () => {
    const p = await h.newProject();
    await h.platform.db.query('INSERT INTO project_alert_recipients (project_id, email) VALUES ($1, $2), ($1, $3)', [p.id, 'a@example.test', 'b@example.test']);
    const before = h.mails.length;
    await h.publish(batch(p.id, [event({ name: 'PreviewOnly' })], { originHost: PREVIEW_HOST }));
    await h.publish(batch(p.id, [event({ name: 'Boom', message: 'Failed to fetch' }), event({ name: 'Boom', message: 'Failed to fetch' })]));
    await vi.waitFor(() => expect(h.mails.length).toBe(before + 1));
    const mail = h.mails[before]!;
    const [g] = (await groupsOf(h.platform, p.id)).filter((x) => x.name === 'Boom');
    expect(mail.to).toEqual(['a@example.test', 'b@example.test']);
    expect(mail.subject).toContain('New issue in production');
    expect(mail.text).toContain(`(${p.slug}), environment production`);
    expect(mail.text).toContain('Boom: Failed to fetch');
    expect(mail.text).toContain('Occurrences: 2');
    expect(mail.text).toContain('loadUser (https://app.example.com/assets/users.js:12:5)');
    expect(mail.text).toContain('Hint, not a diagnosis');
    expect(mail.text).toContain(`http://localhost:8080/projects/${p.slug}/errors/${g!.id}`);

    // resolved, then a regression within 6 hours: no second mail
    await h.platform.db.query(`UPDATE error_groups SET status = 'resolved' WHERE id = $1`, [g!.id]);
    h.clock.advance(60 * 60 * 1000);
    await h.publish(batch(p.id, [event({ name: 'Boom', message: 'Failed to fetch' })]));
    expect((await groupsOf(h.platform, p.id)).find((x) => x.id === g!.id)!.regression_count).toBe(1);
    // after 6 hours a regression mails again
    await h.platform.db.query(`UPDATE error_groups SET status = 'resolved' WHERE id = $1`, [g!.id]);
    h.clock.advance(5 * 60 * 60 * 1000 + 1);
    await h.publish(batch(p.id, [event({ name: 'Boom', message: 'Failed to fetch' })]));
    await vi.waitFor(() => expect(h.mails.length).toBe(before + 2));
    expect(h.mails[before + 1]!.subject).toContain('Regression in production');

    // ignored: never
    await h.platform.db.query(`UPDATE error_groups SET status = 'ignored', last_alert_at = NULL WHERE id = $1`, [g!.id]);
    h.clock.advance(7 * 60 * 60 * 1000);
    await h.publish(batch(p.id, [event({ name: 'Boom', message: 'Failed to fetch' })]));
    // alerts disabled: a new production issue sends nothing
    await h.platform.db.query(
      'INSERT INTO error_settings (project_id, alerts_enabled) VALUES ($1, false) ON CONFLICT (project_id) DO UPDATE SET alerts_enabled = false',
      [p.id],
    );
    await h.publish(batch(p.id, [event({ name: 'Fresh' })]));
    await h.publish(batch(p.id, [event({ name: 'Sync' })], { originHost: PREVIEW_HOST }));
    expect(h.mails.length).toBe(before + 2);
  });

  it('mails the project owner when the project has no recipients, and a mail failure does not fail the batch', async () => {
    const p = await h.newProject();
    const owner = await h.platform.db.query<{ email: string }>('SELECT u.email FROM projects p JOIN users u ON u.id = p.owner_id WHERE p.id = $1', [p.id]);
    const before = h.mails.length;
    await h.publish(batch(p.id, [event({ name: 'OwnerMail' })]));
    await vi.waitFor(() => expect(h.mails.length).toBe(before + 1));
    expect(h.mails[before]!.to).toEqual([owner.rows[0]!.email]);
    h.failMail(true);
    try {
      await h.publish(batch(p.id, [event({ name: 'MailFails' })]));
      expect((await groupsOf(h.platform, p.id)).map((g) => g.name).sort()).toEqual(['MailFails', 'OwnerMail']);
    } finally {
      h.failMail(false);
    }
  });
}
