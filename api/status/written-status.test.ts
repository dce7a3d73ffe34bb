import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import type { MailMessage, Mailer } from '../../platform/ports/mailer.ts';
import { sweepMaintenance } from '../../processor/uptime/maintenance-sweep.ts';
import { startUptimeMonitor, type UptimeMonitor } from '../../processor/uptime/uptime-monitor.ts';
import type { Monitor } from '../../schemas/api/uptime.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { bearer, buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';

/**
 * Incidents and maintenance people write (issue 43), through HTTP with a manual clock: manual incidents and their
 * updates, annotations of automatic ones, maintenance windows that keep their monitors' failures from opening
 * incidents and sending alerts, the status JSON that shows all of it, and the `uptime.incident.*` /
 * `uptime.maintenance.*` events.
 */
let receiver: HttpsReceiver;
let t: Awaited<ReturnType<typeof buildTestApi>>;
let app: FastifyInstance;
let platform: Platform;
let owner: SignedInUser;
let monitor: UptimeMonitor;
const clock = new ManualClock(Date.UTC(2026, 10, 25, 12, 0, 0));
const mail: MailMessage[] = [];
const events: projectEvents.ProjectEvent[] = [];
const recorder: Mailer = { adapter: 'file', send: async (m) => void mail.push(m), close: async () => undefined };

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
  t = await buildTestApi({ overrides: { clock, outbound: outbound.guard, mailer: recorder } });
  app = t.app;
  platform = t.platform;
  owner = await signUpAndSignIn(app, platform);
  monitor = await startUptimeMonitor(platform, { tickMs: false });
  await platform.bus.subscribe(projectEvents.TOPIC, `written-status-test-${randomUUID().slice(0, 8)}`, async (ms) => {
    for (const m of ms) {
      const e = projectEvents.decode(m.value);
      if (e?.event.startsWith('uptime.')) events.push(e);
    }
  });
});
afterAll(async () => {
  await monitor?.stop();
  await t?.close();
  await receiver?.close();
});
beforeEach(() => {
  receiver.respond = () => ({ status: 200, body: 'ok' });
});

const session = () => sessionHeaders(owner.cookie);
const target = (p: string) => receiver.url.replace(/\/hook$/, p);
const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers = session()) =>
  app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
const createMonitor = async (slug: string, body: Record<string, unknown>) => {
  const res = await call('POST', `/v1/projects/${slug}/uptime`, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().monitor as Monitor;
};
const round = async (advanceMs = 0) => {
  clock.advance(advanceMs);
  await monitor.tick();
  await monitor.idle();
};
/** The status JSON past its 5 s cache. */
const statusOf = async (slug: string) => {
  clock.advance(6_000);
  const res = await app.inject({ url: `/v1/status/${slug}` });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const eventsOf = (projectSlug: string) => events.filter((e) => (e.data as { projectSlug?: string }).projectSlug === projectSlug);
const iso = (ms: number) => new Date(ms).toISOString();

describe('incidents people write', () => {
  it('composes, updates and resolves an incident: shown on the status JSON with its updates, private monitors left out, events for each step', async () => {
    const p = await createProject(app, owner.cookie);
    const pub = await createMonitor(p.slug, { name: 'API', url: target(`/${p.slug}/api`), public: true, paused: true });
    const priv = await createMonitor(p.slug, { name: 'Secret admin', url: target(`/${p.slug}/admin`), paused: true });
    const base = `/v1/projects/${p.slug}/uptime/incidents`;

    // Refusals: a monitor of another project, no title, too long a message, a read-only key.
    const other = await createProject(app, owner.cookie);
    const stranger = await createMonitor(other.slug, { name: 'x', url: target('/x'), paused: true });
    const bad = await call('POST', base, { title: 'Slow', message: 'looking', monitorIds: [stranger.id] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: 'invalid_request', fields: [{ path: 'monitorIds.0' }] });
    expect((await call('POST', base, { message: 'no title' })).json().error).toBe('invalid_request');
    expect((await call('POST', base, { title: 'x', message: 'y'.repeat(5001) })).json().error).toBe('invalid_request');
    expect((await call('POST', base, { title: 'x'.repeat(201), message: 'y' })).json().error).toBe('invalid_request');
    const key = await call('POST', `/v1/projects/${p.slug}/keys`, { kind: 'live', scopes: ['uptime:read'] });
    const readOnly = bearer(key.json().key.token as string);
    expect((await call('POST', base, { title: 'x', message: 'y' }, readOnly)).json().error).toBe('insufficient_scope');

    const created = await call('POST', base, {
      title: 'Slow checkout',
      impact: 'major',
      monitorIds: [pub.id, priv.id],
      message: 'We are looking <b>into</b> it.',
    });
    expect(created.statusCode, created.body).toBe(201);
    const incident = created.json().incident;
    expect(incident).toMatchObject({
      kind: 'manual',
      title: 'Slow checkout',
      impact: 'major',
      status: 'investigating',
      resolvedAt: null,
      monitorIds: [pub.id, priv.id],
    });
    expect(incident.id).toMatch(/^inc_/);
    clock.advance(60_000);
    const identified = await call('POST', `${base}/${incident.id}/updates`, { status: 'identified', message: 'A slow database query.' });
    expect(identified.statusCode, identified.body).toBe(201);
    expect((await call('PATCH', `${base}/${incident.id}`, { impact: 'minor', title: 'Slow checkout page' })).json().incident).toMatchObject({
      impact: 'minor',
      title: 'Slow checkout page',
      status: 'identified',
    });
    expect((await call('GET', `${base}/${incident.id}`, undefined, readOnly)).json().incident.updates.map((u: { status: string }) => u.status)).toEqual([
      'investigating',
      'identified',
    ]);

    let page = await statusOf(p.slug);
    expect(page.incidents).toEqual([
      expect.objectContaining({
        id: incident.id,
        kind: 'manual',
        title: 'Slow checkout page',
        impact: 'minor',
        status: 'identified',
        monitorId: pub.id,
        monitor: 'API',
        monitorIds: [pub.id],
        endedAt: null,
        updates: [
          { status: 'investigating', message: 'We are looking <b>into</b> it.', at: expect.any(String) },
          { status: 'identified', message: 'A slow database query.', at: expect.any(String) },
        ],
      }),
    ]);
    expect(JSON.stringify(page)).not.toContain(priv.id);
    expect(JSON.stringify(page)).not.toContain('Secret admin');

    const resolved = await call('POST', `${base}/${incident.id}/updates`, { status: 'resolved', message: 'Fixed.' });
    expect(resolved.json().incident).toMatchObject({ status: 'resolved', resolvedAt: expect.any(String) });
    page = await statusOf(p.slug);
    expect(page.incidents[0]).toMatchObject({ status: 'resolved', endedAt: expect.any(String) });
    // Listed with the project's incidents, beside the automatic ones.
    expect((await call('GET', base)).json()).toMatchObject({ incidents: [], written: [{ id: incident.id, status: 'resolved' }] });
    expect((await call('GET', `${base}/inc_nope`)).statusCode).toBe(404);

    await expect
      .poll(() => eventsOf(p.slug).map((e) => e.event))
      .toEqual(['uptime.incident.created', 'uptime.incident.updated', 'uptime.incident.updated', 'uptime.incident.resolved']);
    const [first, , , last] = eventsOf(p.slug);
    expect(first!.data).toMatchObject({ projectSlug: p.slug, incident: { id: incident.id, monitorIds: [pub.id] }, update: { status: 'investigating' } });
    expect(last!.data).toMatchObject({ incident: { status: 'resolved' }, update: { status: 'resolved', message: 'Fixed.' } });
    expect(JSON.stringify(eventsOf(p.slug))).not.toContain(priv.id);
  });

  it('annotates an automatic incident once: the status JSON shows its title and updates on the incident the monitor opened', async () => {
    const p = await createProject(app, owner.cookie);
    const path = `/${p.slug}/shop`;
    const m = await createMonitor(p.slug, { name: 'Shop', url: target(path), public: true, failuresToDown: 1, intervalSec: 30 });
    receiver.respond = (r) => (r.path === path ? { status: 500 } : { status: 200 });
    await round();
    const [automatic] = (await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents;
    expect(automatic).toMatchObject({ monitorId: m.id, endedAt: null });
    const base = `/v1/projects/${p.slug}/uptime/incidents`;
    expect((await call('POST', base, { automaticIncidentId: 'inc_unknown', message: 'x' })).statusCode).toBe(404);
    const note = await call('POST', base, { automaticIncidentId: automatic.id, message: 'Our payment provider is down.', impact: 'critical' });
    expect(note.statusCode, note.body).toBe(201);
    expect(note.json().incident).toMatchObject({ kind: 'automatic', automaticIncidentId: automatic.id, title: 'Shop is down', monitorIds: [m.id] });
    expect((await call('POST', base, { automaticIncidentId: automatic.id, message: 'again' })).statusCode).toBe(409);
    const page = await statusOf(p.slug);
    expect(page.incidents).toEqual([
      expect.objectContaining({
        monitorId: m.id,
        monitor: 'Shop',
        cause: 'status',
        endedAt: null,
        id: note.json().incident.id,
        kind: 'automatic',
        title: 'Shop is down',
        impact: 'critical',
        updates: [expect.objectContaining({ status: 'investigating', message: 'Our payment provider is down.' })],
      }),
    ]);
  });
  it('keeps updates written in the same instant in the order they were written', async () => {
    const p = await createProject(app, owner.cookie);
    const base = `/v1/projects/${p.slug}/uptime/incidents`;
    const { incident } = (await call('POST', base, { title: 'Busy', message: 'update 0' })).json();
    // The clock stands still: every update has the same time, and random ids would order them by chance.
    for (let i = 1; i <= 8; i++)
      expect((await call('POST', `${base}/${incident.id}/updates`, { status: 'identified', message: `update ${i}` })).statusCode).toBe(201);
    const written = (await call('GET', `${base}/${incident.id}`)).json().incident.updates as { message: string; at: string }[];
    expect(written.map((u) => u.message)).toEqual(Array.from({ length: 9 }, (_, i) => `update ${i}`));
    expect(new Set(written.map((u) => u.at)).size).toBe(9);
  });
  it('stores an incident with its first update, and an update with the status it sets, each whole or not at all', async () => {
    const p = await createProject(app, owner.cookie);
    const base = `/v1/projects/${p.slug}/uptime/incidents`;
    const { incident } = (await call('POST', base, { title: 'Whole', message: 'looking' })).json();
    // The database refuses every write of an update (a constraint, a lost connection): nothing is half-stored.
    const db = t.platform.db;
    const query = db.query;
    db.query = ((sql: string, params?: unknown[]) =>
      /INSERT INTO status_incident_updates/.test(sql) ? Promise.reject(new Error('connection lost')) : query.call(db, sql, params)) as typeof db.query;
    try {
      expect((await call('POST', base, { title: 'Half', message: 'never stored' })).statusCode).toBe(500);
      expect((await call('POST', `${base}/${incident.id}/updates`, { status: 'resolved', message: 'fixed' })).statusCode).toBe(500);
    } finally {
      db.query = query;
    }
    const titles = await db.query<{ title: string }>('SELECT title FROM status_incidents WHERE project_id = $1', [p.id]);
    expect(titles.rows.map((i) => i.title)).toEqual(['Whole']);
    const whole = (await call('GET', `${base}/${incident.id}`)).json().incident;
    expect(whole).toMatchObject({ status: 'investigating', updates: [expect.objectContaining({ message: 'looking' })] });
    expect(whole.updates).toHaveLength(1);
  });
  it('limits changes to 60 a minute per project (each is an event to every subscriber), with Retry-After', async () => {
    const p = await createProject(app, owner.cookie);
    const base = `/v1/projects/${p.slug}/uptime/incidents`;
    const { incident } = (await call('POST', base, { title: 'Flaky', message: 'looking' })).json();
    for (let i = 1; i < 60; i++) expect((await call('PATCH', `${base}/${incident.id}`, { title: `Flaky ${i}` })).statusCode).toBe(200);
    const over = await call('PATCH', `${base}/${incident.id}`, { title: 'one too many' });
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toBe('rate_limited');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    // Reads, and another project, are not held back.
    expect((await call('GET', `${base}/${incident.id}`)).json().incident.title).toBe('Flaky 59');
    const q = await createProject(app, owner.cookie);
    expect((await call('POST', `/v1/projects/${q.slug}/uptime/incidents`, { title: 'Other', message: 'fine' })).statusCode).toBe(201);
    clock.advance(61_000);
    expect((await call('PATCH', `${base}/${incident.id}`, { title: 'later' })).statusCode).toBe(200);
  });
});

describe('maintenance windows', () => {
  it("in progress, its monitors' failures open no incident and send no alert, the page says maintenance; events for scheduled, started, completed", async () => {
    const p = await createProject(app, owner.cookie);
    const path = `/${p.slug}/web`;
    const web = await createMonitor(p.slug, { name: 'Web', url: target(path), public: true, failuresToDown: 1, intervalSec: 30 });
    await round();
    const base = `/v1/projects/${p.slug}/uptime/maintenance`;
    const now = clock.now();
    // Refusals: backwards, in the past, too long, no monitors, another project's monitor.
    const win = { title: 'Database upgrade', message: 'Checkout may be unavailable.', monitorIds: [web.id] };
    expect((await call('POST', base, { ...win, startsAt: iso(now + 120_000), endsAt: iso(now + 60_000) })).json()).toMatchObject({
      error: 'invalid_request',
      fields: [{ path: 'endsAt' }],
    });
    expect((await call('POST', base, { ...win, startsAt: iso(now - 120_000), endsAt: iso(now - 60_000) })).statusCode).toBe(400);
    expect((await call('POST', base, { ...win, startsAt: iso(now), endsAt: iso(now + 40 * 86_400_000) })).statusCode).toBe(400);
    expect((await call('POST', base, { ...win, monitorIds: [], startsAt: iso(now + 60_000), endsAt: iso(now + 600_000) })).statusCode).toBe(400);
    expect((await call('POST', base, { ...win, startsAt: 'tomorrow', endsAt: iso(now + 600_000) })).statusCode).toBe(400);

    const scheduled = await call('POST', base, { ...win, startsAt: iso(now + 60_000), endsAt: iso(now + 600_000) });
    expect(scheduled.statusCode, scheduled.body).toBe(201);
    const w = scheduled.json().maintenance;
    expect(w).toMatchObject({ state: 'scheduled', monitorIds: [web.id] });
    let page = await statusOf(p.slug);
    expect(page.maintenance).toEqual([
      {
        id: w.id,
        title: 'Database upgrade',
        message: 'Checkout may be unavailable.',
        monitorIds: [web.id],
        startsAt: w.startsAt,
        endsAt: w.endsAt,
        state: 'scheduled',
      },
    ]);
    expect(page.status).toBe('up');

    // In the window, the site fails: no incident, no mail, no uptime.down.
    receiver.respond = (r) => (r.path === path ? { status: 503 } : { status: 200 });
    await round(60_000);
    await round(30_000);
    await round(30_000);
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toEqual([]);
    expect(mail.filter((x) => x.subject.includes('Web'))).toEqual([]);
    page = await statusOf(p.slug);
    expect(page.status).toBe('maintenance');
    expect(page.monitors[0]).toMatchObject({ id: web.id, state: 'maintenance' });
    expect(page.maintenance[0]).toMatchObject({ id: w.id, state: 'in_progress' });
    expect((await call('GET', base)).json().maintenance[0]).toMatchObject({ id: w.id, state: 'in_progress' });

    // Past its end, still failing: the next failure opens an incident and alerts.
    await round(600_000);
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toEqual([
      expect.objectContaining({ monitorId: web.id, endedAt: null }),
    ]);
    await expect.poll(() => mail.filter((x) => x.subject.includes('[down] Web')).length).toBe(1);
    page = await statusOf(p.slug);
    expect(page).toMatchObject({ status: 'down', monitors: [{ state: 'down' }], maintenance: [{ id: w.id, state: 'completed' }] });
    // Completed, it cannot change or be cancelled.
    expect((await call('PATCH', `${base}/${w.id}`, { title: 'later' })).statusCode).toBe(409);
    expect((await call('DELETE', `${base}/${w.id}`)).statusCode).toBe(409);

    await expect
      .poll(() => eventsOf(p.slug).map((e) => e.event))
      .toEqual(['uptime.maintenance.scheduled', 'uptime.maintenance.started', 'uptime.maintenance.completed']);
    expect(eventsOf(p.slug)[1]!.data).toMatchObject({ projectSlug: p.slug, maintenance: { id: w.id, state: 'in_progress', monitorIds: [web.id] } });
    await expect.poll(() => events.filter((e) => e.event === 'uptime.down' && (e.data as { monitor: { id: string } }).monitor.id === web.id).length).toBe(1);
  });

  it('a heartbeat that misses its check-in during maintenance opens no incident', async () => {
    const p = await createProject(app, owner.cookie);
    const hb = await createMonitor(p.slug, {
      kind: 'heartbeat',
      slug: 'nightly',
      schedule: { type: 'interval', value: 1, unit: 'minute' },
      checkinMarginMin: 1,
      failuresToDown: 1,
    });
    const now = clock.now();
    const res = await call('POST', `/v1/projects/${p.slug}/uptime/maintenance`, {
      title: 'Job paused',
      monitorIds: [hb.id],
      startsAt: iso(now),
      endsAt: iso(now + 10 * 60_000),
    });
    expect(res.statusCode, res.body).toBe(201);
    await round(4 * 60_000);
    const missed = (await call('GET', `/v1/projects/${p.slug}/uptime/${hb.id}/check-ins`)).json().checkIns;
    expect(missed.some((c: { status: string }) => c.status === 'missed')).toBe(true);
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toEqual([]);
    // After the window, a missed check-in opens one.
    await round(10 * 60_000);
    await round(3 * 60_000);
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toEqual([expect.objectContaining({ monitorId: hb.id })]);
  });

  it('a window moved while its start was being announced is announced again at its new start', async () => {
    const p = await createProject(app, owner.cookie);
    const now = clock.now();
    const base = `/v1/projects/${p.slug}/uptime/maintenance`;
    const api = await createMonitor(p.slug, { name: 'Api', url: target(`/${p.slug}/api`), public: true, intervalSec: 30 });
    const made = await call('POST', base, { title: 'Moved', monitorIds: [api.id], startsAt: iso(now), endsAt: iso(now + 3_600_000) });
    expect(made.statusCode, made.body).toBe(201);
    const w = made.json().maintenance;
    // The person moves it an hour on in the instant its start goes out.
    const bus = platform.bus;
    const moving = {
      ...bus,
      publish: async (topic: string, ms: Parameters<typeof bus.publish>[1]) => {
        const moved = await call('PATCH', `${base}/${w.id}`, { startsAt: iso(now + 3_600_000), endsAt: iso(now + 7_200_000) });
        expect(moved.statusCode, moved.body).toBe(200);
        return bus.publish(topic, ms);
      },
    } as typeof bus;
    expect(await sweepMaintenance({ ...platform, bus: moving }, now)).toEqual({ started: 1, completed: 0 });
    const starts = () => eventsOf(p.slug).filter((e) => e.event === 'uptime.maintenance.started');
    await expect.poll(() => starts().length).toBe(1);
    await round(3_600_000);
    await expect.poll(() => starts().length).toBe(2);
    expect(starts()[1]!.data).toMatchObject({ maintenance: { id: w.id, startsAt: iso(now + 3_600_000) } });
  });

  it('changes and cancels a window: cancelled, its monitors alert again at once, and uptime.maintenance.cancelled goes out', async () => {
    const p = await createProject(app, owner.cookie);
    const path = `/${p.slug}/api`;
    const api = await createMonitor(p.slug, { name: 'Api', url: target(path), public: true, failuresToDown: 1, intervalSec: 30 });
    const now = clock.now();
    const base = `/v1/projects/${p.slug}/uptime/maintenance`;
    const w = (await call('POST', base, { title: 'Move', monitorIds: [api.id], startsAt: iso(now), endsAt: iso(now + 3_600_000) })).json().maintenance;
    expect(w.state).toBe('in_progress');
    const changed = await call('PATCH', `${base}/${w.id}`, { title: 'Move to the new region', endsAt: iso(now + 7_200_000) });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().maintenance).toMatchObject({ title: 'Move to the new region', endsAt: iso(now + 7_200_000) });
    expect((await call('PATCH', `${base}/${w.id}`, { endsAt: iso(now - 1000) })).statusCode).toBe(400);
    receiver.respond = (r) => (r.path === path ? { status: 500 } : { status: 200 });
    await round();
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toEqual([]);
    const cancelled = await call('DELETE', `${base}/${w.id}`);
    expect(cancelled.json().maintenance).toMatchObject({ state: 'cancelled', cancelledAt: expect.any(String) });
    expect((await call('DELETE', `${base}/${w.id}`)).statusCode).toBe(409);
    await round(30_000);
    expect((await call('GET', `/v1/projects/${p.slug}/uptime/incidents`)).json().incidents).toHaveLength(1);
    const page = await statusOf(p.slug);
    expect(page.maintenance).toEqual([]);
    await expect
      .poll(() => eventsOf(p.slug).map((e) => e.event))
      .toEqual(['uptime.maintenance.scheduled', 'uptime.maintenance.started', 'uptime.maintenance.cancelled']);
    expect(eventsOf(p.slug)[2]!.data).toMatchObject({ maintenance: { id: w.id, state: 'cancelled' } });
  });
});
