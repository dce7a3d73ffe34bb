import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import type { MailMessage, Mailer } from '../../platform/ports/mailer.ts';
import { createCheckInHandler } from '../../processor/uptime/check-ins/check-in-pipeline.ts';
import { startUptimeMonitor, type UptimeMonitor } from '../../processor/uptime/uptime-monitor.ts';
import type { CheckIn, Monitor } from '../../schemas/api/uptime.ts';
import type { CheckInItem, ClientItemsMessage } from '../../schemas/bus/client-items.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';

/**
 * Heartbeat (cron) monitors (issue 40): check-ins as the client-items consumer hands them to the check-in pipeline
 * (created and updated from monitor_config, unknown slugs dropped, duplicates), and the uptime monitor's detection of
 * missed, timed-out and failed runs with a manual clock: incidents, `uptime.*` events and mail as for URL monitors, and
 * recovery; the API's view of them (list, detail, check-ins, made by hand).
 */
describe('heartbeat monitors (embedded)', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let app: FastifyInstance;
  let platform: Platform;
  let owner: SignedInUser;
  let monitor: UptimeMonitor;
  let handle: ReturnType<typeof createCheckInHandler>;
  const start = Date.UTC(2026, 10, 25, 12, 0, 0);
  const clock = new ManualClock(start);
  const mail: MailMessage[] = [];
  const events: projectEvents.ProjectEvent[] = [];
  const recorder: Mailer = { adapter: 'file', send: async (m) => void mail.push(m), close: async () => undefined };
  const MIN = 60_000;

  beforeAll(async () => {
    t = await buildTestApi({ overrides: { clock, mailer: recorder } });
    app = t.app;
    platform = t.platform;
    owner = await signUpAndSignIn(app, platform);
    monitor = await startUptimeMonitor(platform, { tickMs: false });
    handle = createCheckInHandler(platform);
    await platform.bus.subscribe(projectEvents.TOPIC, `heartbeat-test-${randomUUID().slice(0, 8)}`, async (ms) => {
      for (const m of ms) {
        const e = projectEvents.decode(m.value);
        if (e?.event.startsWith('uptime.')) events.push(e);
      }
    });
  });
  afterAll(async () => {
    await monitor?.stop();
    await t?.close();
  });

  const session = () => sessionHeaders(owner.cookie);
  const message = (projectId: string, checkIns: CheckInItem[], batchId = randomUUID()): ClientItemsMessage => ({
    v: 1,
    batchId,
    projectId,
    originHost: null,
    receivedAt: clock.now(),
    checkIns,
  });
  const item = (slug: string, status: CheckInItem['status'], extra: Partial<CheckInItem> = {}): CheckInItem => ({
    checkInId: randomUUID(),
    monitorSlug: slug,
    status,
    timestamp: clock.now(),
    ...extra,
  });
  const list = async (slug: string) =>
    ((await app.inject({ url: `/v1/projects/${slug}/uptime`, headers: session() })).json().monitors as Monitor[]).filter((m) => m.kind === 'heartbeat');
  const read = async (slug: string, id: string) =>
    (await app.inject({ url: `/v1/projects/${slug}/uptime/${id}`, headers: session() })).json().monitor as Monitor;
  const checkIns = async (slug: string, id: string) =>
    (await app.inject({ url: `/v1/projects/${slug}/uptime/${id}/check-ins`, headers: session() })).json().checkIns as CheckIn[];
  /** Move time on and run one round of the uptime monitor (its heartbeat sweep included) to the end. */
  const round = async (advanceMs = 0) => {
    clock.advance(advanceMs);
    await monitor.tick();
    await monitor.idle();
  };
  const hourly = { schedule: { type: 'crontab' as const, value: '0 * * * *' }, checkinMargin: 5, maxRuntime: 10 };

  it('creates a monitor from monitor_config and updates it by slug; drops a check-in for an unknown slug without config, and duplicates', async () => {
    clock.set(start);
    const p = await createProject(app, owner.cookie);
    const unknown = await handle([message(p.id, [item('nobody', 'ok')])]);
    expect(unknown.dropped).toEqual({ check_in_unknown_monitor: 1 });
    const badConfig = await handle([message(p.id, [item('bad', 'ok', { monitorConfig: { schedule: { type: 'crontab', value: '0 0 * * * *' } } })])]);
    expect(badConfig.dropped).toEqual({ check_in_invalid_monitor_config: 1 });
    expect(await list(p.slug)).toEqual([]);

    const run = item('Nightly Backup', 'in_progress', { monitorConfig: hourly, environment: 'production' });
    const first = message(p.id, [run]);
    expect(await handle([first])).toMatchObject({ accepted: 1, duplicates: 0, dropped: {} });
    const [m] = await list(p.slug);
    expect(m).toMatchObject({
      kind: 'heartbeat',
      name: 'nightly-backup',
      state: 'pending',
      heartbeat: {
        slug: 'nightly-backup',
        schedule: { type: 'crontab', value: '0 * * * *' },
        timezone: 'UTC',
        checkinMarginMin: 5,
        maxRuntimeMin: 10,
        lastCheckIn: { status: 'in_progress', at: new Date(start).toISOString() },
        // The run at 12:00 is the 12:00 one: the next is expected at 13:00.
        nextExpectedAt: new Date(start + 60 * MIN).toISOString(),
      },
    });
    // A re-delivered message (or the SDK's retry) is a duplicate and changes nothing.
    expect(await handle([first])).toMatchObject({ accepted: 0, duplicates: 1 });
    clock.advance(2 * MIN);
    const done = item('nightly-backup', 'ok', { checkInId: run.checkInId, duration: 95.5 });
    expect(await handle([message(p.id, [done])])).toMatchObject({ accepted: 1 });
    expect(await handle([message(p.id, [done])])).toMatchObject({ duplicates: 1 });
    // Closing it again with another status is refused: it is closed.
    expect((await handle([message(p.id, [{ ...done, status: 'error' }])])).dropped).toEqual({ check_in_already_closed: 1 });
    expect(await read(p.slug, m!.id)).toMatchObject({ state: 'up', heartbeat: { lastCheckIn: { status: 'ok' } } });
    expect(await checkIns(p.slug, m!.id)).toEqual([
      {
        id: run.checkInId,
        status: 'ok',
        startedAt: new Date(start).toISOString(),
        finishedAt: new Date(start + 2 * MIN).toISOString(),
        durationMs: 95_500,
        environment: 'production',
        release: null,
      },
    ]);

    // A later config updates the same monitor (upsert by project and slug), and moves its expected time.
    const every30 = { schedule: { type: 'interval' as const, value: 30, unit: 'minute' as const }, checkinMargin: 2, timezone: 'Europe/Paris' };
    expect(await handle([message(p.id, [item('nightly-backup', 'in_progress', { monitorConfig: every30 })])])).toMatchObject({ accepted: 1 });
    const [again, ...more] = await list(p.slug);
    expect(more).toEqual([]);
    expect(again).toMatchObject({
      id: m!.id,
      heartbeat: { schedule: { type: 'interval', value: 30, unit: 'minute' }, checkinMarginMin: 2, timezone: 'Europe/Paris' },
    });
    // Another project's check-in with the same slug is its own monitor's.
    const other = await createProject(app, owner.cookie);
    expect((await handle([message(other.id, [item('nightly-backup', 'ok')])])).dropped).toEqual({ check_in_unknown_monitor: 1 });
  });

  it('a missed check-in opens an incident with uptime.down and one mail; an ok check-in ends it with uptime.up', async () => {
    clock.set(start);
    const p = await createProject(app, owner.cookie);
    await handle([message(p.id, [item('hourly', 'ok', { monitorConfig: hourly })])]);
    const [m] = await list(p.slug);
    expect(m).toMatchObject({ state: 'up', heartbeat: { nextExpectedAt: new Date(start + 60 * MIN).toISOString() } });

    await round(64 * MIN); // 13:04, within the margin
    expect((await read(p.slug, m!.id)).state).toBe('up');
    await round(2 * MIN); // 13:06: missed
    const down = await read(p.slug, m!.id);
    expect(down).toMatchObject({
      state: 'down',
      lastCheck: { ok: false, error: 'missed' },
      heartbeat: { lastCheckIn: { status: 'missed' }, nextExpectedAt: new Date(start + 120 * MIN).toISOString() },
    });
    await round(); // sends nothing twice
    const incidents = (await app.inject({ url: `/v1/projects/${p.slug}/uptime/incidents`, headers: session() })).json().incidents;
    expect(incidents).toEqual([expect.objectContaining({ monitorId: m!.id, endedAt: null, cause: expect.objectContaining({ error: 'missed' }) })]);
    const downMail = mail.filter((x) => x.subject === '[down] hourly missed its check-in');
    expect(downMail).toHaveLength(1);
    expect(downMail[0]!.to).toEqual([owner.email]);
    expect(downMail[0]!.text).toMatch(/no check-in by 2026-11-25T13:00:00.000Z/);

    clock.advance(10 * MIN);
    expect(await handle([message(p.id, [item('hourly', 'ok')])])).toMatchObject({ accepted: 1, counted: { check_in_incidents_ended: 1 } });
    await round();
    expect((await read(p.slug, m!.id)).state).toBe('up');
    expect(mail.filter((x) => x.subject.startsWith('[up] hourly is back'))).toHaveLength(1);
    const mine = () => events.filter((e) => (e.data as { monitor?: { id: string } }).monitor?.id === m!.id);
    await expect.poll(() => mine().map((e) => e.event)).toEqual(['uptime.down', 'uptime.up']);
    expect(mine()[0]!.data).toMatchObject({ monitor: { kind: 'heartbeat', slug: 'hourly' }, incident: { cause: { error: 'missed' } } });
    expect((await checkIns(p.slug, m!.id)).map((c) => c.status)).toEqual(['ok', 'missed', 'ok']);
  });

  it('an in-progress check-in past its maximum runtime times out (failed); an error check-in fails; recovery takes the configured successes', async () => {
    clock.set(start);
    const p = await createProject(app, owner.cookie);
    const config = { ...hourly, recoveryThreshold: 2 };
    const run = item('etl', 'in_progress', { monitorConfig: config });
    await handle([message(p.id, [run])]);
    const [m] = await list(p.slug);
    await round(9 * MIN);
    expect((await checkIns(p.slug, m!.id))[0]!.status).toBe('in_progress');
    await round(2 * MIN); // 12:11, past 10 min
    expect(await read(p.slug, m!.id)).toMatchObject({ state: 'down', lastCheck: { error: 'timeout' } });
    expect((await checkIns(p.slug, m!.id))[0]).toMatchObject({ id: run.checkInId, status: 'timeout', durationMs: 10 * MIN });
    // The job's late ok for the timed-out run is refused; it stays down.
    expect((await handle([message(p.id, [item('etl', 'ok', { checkInId: run.checkInId })])])).dropped).toEqual({ check_in_already_closed: 1 });
    expect(mail.filter((x) => x.subject === '[down] etl ran past its maximum runtime')).toHaveLength(1);

    // One ok does not end it (recoveryThreshold 2), the second does.
    clock.set(start + 60 * MIN);
    await handle([message(p.id, [item('etl', 'ok')])]);
    expect((await read(p.slug, m!.id)).state).toBe('down');
    clock.set(start + 120 * MIN);
    await handle([message(p.id, [item('etl', 'ok')])]);
    expect((await read(p.slug, m!.id)).state).toBe('up');

    // An error check-in is a failure: a new incident (failed).
    clock.set(start + 180 * MIN);
    const failed = await handle([message(p.id, [item('etl', 'error', { duration: 3 })])]);
    expect(failed).toMatchObject({ accepted: 1, counted: { check_in_incidents_opened: 1 } });
    await round();
    expect(await read(p.slug, m!.id)).toMatchObject({ state: 'down', lastCheck: { error: 'failed' } });
    expect(mail.filter((x) => x.subject === '[down] etl reported an error')).toHaveLength(1);
    const mine = () => events.filter((e) => (e.data as { monitor?: { id: string } }).monitor?.id === m!.id);
    await expect.poll(() => mine().map((e) => e.event)).toEqual(['uptime.down', 'uptime.up', 'uptime.down']);
    expect(mine().map((e) => (e.data as { incident: { cause: { error: string } } }).incident.cause.error)).toEqual(['timeout', 'timeout', 'failed']);
  });

  it('a paused heartbeat takes no check-in and is never missed; the HTTP form without an id closes the newest run', async () => {
    clock.set(start);
    const p = await createProject(app, owner.cookie);
    await handle([message(p.id, [item('quiet', 'ok', { monitorConfig: hourly })])]);
    const [m] = await list(p.slug);
    await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/uptime/${m!.id}`, headers: session(), payload: { paused: true } });
    expect((await handle([message(p.id, [item('quiet', 'ok')])])).dropped).toEqual({ check_in_monitor_paused: 1 });
    await round(5 * 60 * MIN);
    expect((await read(p.slug, m!.id)).state).toBe('paused');

    const resumed = await app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/uptime/${m!.id}`, headers: session(), payload: { paused: false } });
    expect(resumed.json().monitor.heartbeat.nextExpectedAt).toBe(new Date(start + 6 * 60 * MIN).toISOString());
    const nil = '00000000-0000-0000-0000-000000000000';
    await handle([message(p.id, [item('quiet', 'in_progress', { checkInId: '' })])]);
    clock.advance(MIN);
    await handle([message(p.id, [item('quiet', 'ok', { checkInId: nil })])]);
    const latest = await checkIns(p.slug, m!.id);
    expect(latest[0]).toMatchObject({ status: 'ok', durationMs: MIN });
    expect(latest).toHaveLength(2);
  });

  it('makes a heartbeat by hand through the API, refuses what does not apply, and keeps at most 200 check-ins', async () => {
    clock.set(start);
    const p = await createProject(app, owner.cookie);
    const post = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/uptime`, headers: session(), payload });
    const made = await post({
      kind: 'heartbeat',
      slug: 'report',
      name: 'Weekly report',
      schedule: { type: 'crontab', value: '0 9 * * MON' },
      timezone: 'Europe/Paris',
    });
    expect(made.statusCode, made.body).toBe(201);
    const m = made.json().monitor as Monitor;
    expect(m).toMatchObject({
      kind: 'heartbeat',
      name: 'Weekly report',
      url: '',
      heartbeat: { slug: 'report', checkinMarginMin: 1, maxRuntimeMin: 30, nextExpectedAt: '2026-11-30T08:00:00.000Z', lastCheckIn: null },
    });
    expect((await post({ kind: 'heartbeat', slug: 'report', schedule: { type: 'crontab', value: '@daily' } })).statusCode).toBe(409);
    const bad = await post({ kind: 'heartbeat', slug: 'x', schedule: { type: 'crontab', value: '0 0 9 * * *' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid_request', fields: [{ path: 'schedule' }] });
    const misplaced = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${p.slug}/uptime/${m.id}`,
      headers: session(),
      payload: { url: 'https://x.example/' },
    });
    expect(misplaced.json()).toMatchObject({ error: 'invalid_request', fields: [{ path: 'url' }] });
    // The SDK checks in to the monitor made by hand (no config needed).
    expect(await handle([message(p.id, [item('report', 'ok')])])).toMatchObject({ accepted: 1 });
    const many = Array.from({ length: 205 }, (_, i) => item('report', 'ok', { checkInId: `run-${i}` }));
    for (let i = 0; i < many.length; i += 100) await handle([message(p.id, many.slice(i, i + 100))]);
    const kept = (await app.inject({ url: `/v1/projects/${p.slug}/uptime/${m.id}/check-ins?limit=200`, headers: session() })).json().checkIns;
    expect(kept).toHaveLength(200);
  });
});
