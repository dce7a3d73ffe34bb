import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { siteMonitorRepository } from '../../domain/uptime/site-monitor-repository.ts';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import type { RelationalStore } from '../../platform/ports/relational-store.ts';
import type { Monitor } from '../../schemas/api/uptime.ts';
import type { CheckInItem } from '../../schemas/bus/client-items.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { inertMailer } from '../../test/support/stubs.ts';
import { createCheckInHandler } from './check-ins/check-in-pipeline.ts';
import { heartbeatsRepository } from './repositories/heartbeats-repository.ts';
import { monitorsRepository } from './repositories/monitors-repository.ts';
import { sweepHeartbeats } from './heartbeat-sweep.ts';
import { STAMP_POLL_MS, startUptimeMonitor, type UptimeMonitor } from './uptime-monitor.ts';

/**
 * The uptime monitor at rest (issue 44, "light at rest"), on the embedded default (PGlite): after a claim of its timer
 * that found nothing it knows when the next URL check is due and claims nothing before then, reading the `uptime`
 * change stamp (migration 0049) once a second; a monitor made or resumed moves the stamp and is claimed at the next
 * read. The timer runs on fake setInterval and performance.now() (what its rest and back-off read), the manual clock
 * moved in step; each tick is awaited to its end. What moves the stamp is read through the API and the repositories
 * that write uptime_monitors.
 */
describe('the uptime monitor at rest claims when the next check is due or the uptime stamp moved (embedded)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 27, 6, 0, 0));
  const TICK = 250;
  let receiver: HttpsReceiver;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let app: FastifyInstance;
  let platform: Platform;
  let owner: SignedInUser;
  let project: { id: string; slug: string };

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    receiver.respond = () => ({ status: 200, body: 'all systems go' });
    const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    t = await buildTestApi({ overrides: { clock, outbound: outbound.guard, mailer: inertMailer } });
    app = t.app;
    platform = t.platform;
    owner = await signUpAndSignIn(app, platform);
    project = await createProject(app, owner.cookie);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });
  // Each test starts with no monitor: another test's would come due in its ticks.
  beforeEach(async () => {
    await platform.db.query('DELETE FROM uptime_monitors');
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  const session = () => sessionHeaders(owner.cookie);
  const path = (name: string) => `/${project.slug}/${name}`;
  const target = (name: string) => receiver.url.replace(/\/hook$/, path(name));
  const hits = (name: string) => receiver.requests.filter((r) => r.path === path(name)).length;
  const stamp = () => monitorsRepository.changeStamp(platform.db);
  const create = async (name: string, extra: Record<string, unknown> = {}) => {
    const res = await app.inject({
      method: 'POST',
      url: `/v1/projects/${project.slug}/uptime`,
      headers: session(),
      payload: { name, url: target(name), intervalSec: 60, ...extra },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().monitor as Monitor;
  };
  const patch = async (id: string, payload: Record<string, unknown>) => {
    const res = await app.inject({ method: 'PATCH', url: `/v1/projects/${project.slug}/uptime/${id}`, headers: session(), payload });
    expect(res.statusCode, res.body).toBe(200);
  };

  /**
   * A monitor on its 250 ms timer (fake setInterval and performance.now()), stopped after `fn`. `tick` moves the clock
   * and the timer one tick on and waits for the tick and the checks it started; `claims` counts claim statements.
   */
  async function onTimer(fn: (m: { monitor: UptimeMonitor; tick: () => Promise<void>; claims: () => number; stampReads: () => number }) => Promise<void>) {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
    const claimDue = vi.spyOn(monitorsRepository, 'claimDue');
    const changeStamp = vi.spyOn(monitorsRepository, 'changeStamp');
    const monitor = await startUptimeMonitor(platform, { tickMs: TICK });
    const tick = async () => {
      clock.advance(TICK);
      vi.advanceTimersByTime(TICK);
      await monitor.idle();
    };
    try {
      await fn({ monitor, tick, claims: () => claimDue.mock.calls.length, stampReads: () => changeStamp.mock.calls.length });
    } finally {
      await monitor.stop();
      vi.useRealTimers();
    }
  }
  /** Ticks until `done`, at most `max`; answers how many it took. */
  const ticksUntil = async (tick: () => Promise<void>, done: () => boolean, max: number) => {
    for (let n = 1; n <= max; n++) {
      await tick();
      if (done()) return n;
    }
    return Number.POSITIVE_INFINITY;
  };
  /** Ticks of the timer between two stamp reads, and one more for a commit just after a read. */
  const STAMP_TICKS = STAMP_POLL_MS / TICK + 1;

  it('with one monitor due in 30 s the timer claims nothing until it is due, then checks it at that tick', async () => {
    await create('rest', { intervalSec: 30 });
    const due = clock.now() + 30_000;
    await onTimer(async ({ monitor, tick, claims, stampReads }) => {
      // The first tick claims it (due at its creation); the next finds nothing and rests until 30 s after it was due.
      await tick();
      expect(hits('rest')).toBe(1);
      await tick();
      const [restingClaims, restingReads, restingSince] = [claims(), stampReads(), clock.now()];
      while (clock.now() + TICK < due) await tick();
      expect(claims()).toBe(restingClaims);
      expect(hits('rest')).toBe(1);
      // Meanwhile the stamp once a second (every fourth tick).
      const seconds = (clock.now() - restingSince) / STAMP_POLL_MS;
      expect(stampReads() - restingReads).toBeGreaterThanOrEqual(Math.floor(seconds) - 1);
      expect(stampReads() - restingReads).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
      await tick();
      expect(clock.now()).toBe(due);
      expect(claims()).toBe(restingClaims + 1);
      expect(hits('rest')).toBe(2);
      // Not late: at the tick it was due (the first check waited for the first tick).
      expect(monitor.stats().lateMs).toEqual({ max: TICK, over1s: 0 });
    });
  });

  it('a monitor made through the API while the timer rests is claimed at the next stamp read, not when the known one is due', async () => {
    await create('known');
    await onTimer(async ({ tick, claims }) => {
      await tick();
      await tick();
      expect(hits('known')).toBe(1);
      const resting = claims();
      await tick();
      expect(claims()).toBe(resting);

      const before = await stamp();
      await create('made');
      expect(await stamp()).not.toBe(before);
      expect(await ticksUntil(tick, () => hits('made') === 1, 60_000 / TICK)).toBeLessThanOrEqual(STAMP_TICKS);
      expect(hits('known')).toBe(1);
      // At rest again after it.
      await tick();
      const again = claims();
      for (let i = 0; i < 3 * STAMP_TICKS; i++) await tick();
      expect(claims()).toBe(again);
    });
  });

  it('a paused monitor resumed while the timer rests is claimed at the next stamp read; pausing and renaming move no stamp', async () => {
    const known = await create('scheduled');
    const before = await stamp();
    const paused = await create('paused', { paused: true });
    expect(await stamp()).toBe(before);
    await onTimer(async ({ tick, claims }) => {
      await tick();
      await tick();
      expect([hits('scheduled'), hits('paused')]).toEqual([1, 0]);
      const resting = claims();
      await patch(known.id, { name: 'renamed' });
      await patch(known.id, { paused: true });
      expect(await stamp()).toBe(before);
      for (let i = 0; i < 2 * STAMP_TICKS; i++) await tick();
      expect(claims()).toBe(resting);

      await patch(paused.id, { paused: false });
      expect(await stamp()).not.toBe(before);
      expect(await ticksUntil(tick, () => hits('paused') === 1, 60_000 / TICK)).toBeLessThanOrEqual(STAMP_TICKS);
    });
  });

  it("a claim that runs a check, its record and heartbeats' check-ins and sweep move no stamp; a new URL, a site monitor and a transaction's changes do, once", async () => {
    const m = await create('checked', { intervalSec: 30, failuresToDown: 1 });
    const monitor = await startUptimeMonitor(platform, { tickMs: false });
    try {
      const before = await stamp();
      await monitor.tick();
      await monitor.idle();
      expect(hits('checked')).toBe(1);
      // Down: its record opens an incident; claimed again 30 s on.
      receiver.respond = () => ({ status: 500 });
      clock.advance(30_000);
      await monitor.tick();
      await monitor.idle();
      receiver.respond = () => ({ status: 200, body: 'all systems go' });
      expect(hits('checked')).toBe(2);
      expect(await stamp()).toBe(before);

      // Heartbeats: made by hand, checking in, missed by the sweep.
      const hb = await app.inject({
        method: 'POST',
        url: `/v1/projects/${project.slug}/uptime`,
        headers: session(),
        payload: { kind: 'heartbeat', slug: 'nightly', schedule: { type: 'interval', value: 1, unit: 'hour' }, checkinMarginMin: 1 },
      });
      expect(hb.statusCode, hb.body).toBe(201);
      expect(await stamp()).toBe(before);
      const handle = createCheckInHandler(platform);
      const item = (status: CheckInItem['status']): CheckInItem => ({ checkInId: randomUUID(), monitorSlug: 'nightly', status, timestamp: clock.now() });
      const message = (checkIns: CheckInItem[]) => ({
        v: 1 as const,
        batchId: randomUUID(),
        projectId: project.id,
        originHost: null,
        receivedAt: clock.now(),
        checkIns,
      });
      expect(await handle([message([item('ok')])])).toMatchObject({ accepted: 1 });
      const hourly = { schedule: { type: 'crontab' as const, value: '0 * * * *' }, checkinMargin: 5, maxRuntime: 10 };
      expect(await handle([message([{ ...item('in_progress'), monitorSlug: 'by-config', monitorConfig: hourly }])])).toMatchObject({ accepted: 1 });
      expect(await stamp()).toBe(before);
      clock.advance(3 * 3_600_000);
      await monitor.tick();
      await monitor.idle();
      expect(monitor.stats().heartbeats.missed + monitor.stats().heartbeats.timeouts).toBeGreaterThan(0);
      expect(await stamp()).toBe(before);

      // A new URL checks at once: it moves the stamp.
      await patch(m.id, { url: target('moved') });
      const moved = await stamp();
      expect(moved).not.toBe(before);
      // The live site's monitor (domain/uptime/site-monitor-repository.ts) is a URL monitor made.
      const site = await createProject(app, owner.cookie);
      expect(
        await siteMonitorRepository.insert(platform.db, { projectId: site.id, url: target('site'), intervalSec: 60, timeoutMs: 5000, now: clock.now() }),
      ).toBe(true);
      const afterSite = await stamp();
      expect(afterSite).not.toBe(moved);
      // Two monitors moved earlier in one transaction: one bump.
      await create('second');
      const one = Number(await stamp());
      await platform.db.transaction(async (tx) => {
        await tx.query("UPDATE uptime_monitors SET next_check_at = next_check_at - interval '1 hour' WHERE kind = 'url'");
        await tx.query("UPDATE uptime_monitors SET next_check_at = next_check_at - interval '1 hour' WHERE kind = 'url'");
      });
      expect(Number(await stamp())).toBe(one + 1);
      // Moved later, or deleted: no bump.
      await platform.db.query("UPDATE uptime_monitors SET next_check_at = next_check_at + interval '2 hours' WHERE kind = 'url'");
      await platform.db.query("DELETE FROM uptime_monitors WHERE kind = 'url'");
      expect(Number(await stamp())).toBe(one + 1);
    } finally {
      await monitor.stop();
    }
  });
  it('the heartbeat sweep asks one statement when it has nothing to do, and its question agrees with its three reads', async () => {
    const asked: string[] = [];
    const db: RelationalStore = {
      adapter: platform.db.adapter,
      async query(sql, params) {
        asked.push(sql);
        return platform.db.query(sql, params);
      },
      transaction: (fn) => platform.db.transaction(fn),
      close: async () => undefined,
    };
    const sweep = async () => {
      asked.length = 0;
      return sweepHeartbeats({ ...platform, db }, clock.now());
    };
    /** anyDue says yes exactly when one of the sweep's three reads finds something. */
    const agrees = async () => {
      const now = clock.now();
      const found =
        (await heartbeatsRepository.overdueRunning(platform.db, now, 1)).length +
        (await heartbeatsRepository.overdueMonitors(platform.db, now, 1)).length +
        (await heartbeatsRepository.unalerted(platform.db, now, 1)).length;
      expect(await heartbeatsRepository.anyDue(platform.db, now)).toBe(found > 0);
      return found > 0;
    };
    const nothing = { timeouts: 0, missed: 0, transitions: 0, alerts: 0 };
    expect(await agrees()).toBe(false);
    expect(await sweep()).toEqual(nothing);
    expect(asked).toHaveLength(1);

    // A heartbeat expecting a check-in every hour, and a job checking in that may run 10 minutes.
    const hb = await app.inject({
      method: 'POST',
      url: `/v1/projects/${project.slug}/uptime`,
      headers: session(),
      payload: { kind: 'heartbeat', slug: 'hourly-job', schedule: { type: 'interval', value: 1, unit: 'hour' }, checkinMarginMin: 1, failuresToDown: 1 },
    });
    expect(hb.statusCode, hb.body).toBe(201);
    const handle = createCheckInHandler(platform);
    const inProgress: CheckInItem = {
      checkInId: randomUUID(),
      monitorSlug: 'long-job',
      status: 'in_progress',
      timestamp: clock.now(),
      monitorConfig: { schedule: { type: 'crontab', value: '0 * * * *' }, checkinMargin: 5, maxRuntime: 10 },
    };
    const message = { v: 1 as const, batchId: randomUUID(), projectId: project.id, originHost: null, receivedAt: clock.now(), checkIns: [inProgress] };
    expect(await handle([message])).toMatchObject({ accepted: 1 });
    expect(await agrees()).toBe(false);

    // 11 minutes on: the job ran past its runtime (a timeout), but its monitor is paused: nothing is due, one statement.
    const longJob = (await platform.db.query<{ id: string }>(`SELECT id FROM uptime_monitors WHERE slug = 'long-job'`)).rows[0]!.id;
    await patch(longJob, { paused: true });
    clock.advance(11 * 60_000);
    expect(await agrees()).toBe(false);
    expect(await sweep()).toEqual(nothing);
    expect(asked).toHaveLength(1);
    // Resumed: the timeout is due.
    await patch(longJob, { paused: false });
    expect(await agrees()).toBe(true);
    expect((await sweep()).timeouts).toBe(1);
    // Hours on: the heartbeat missed its check-in, an incident opens, its alert is owed; sweeps until all is done.
    clock.advance(3 * 3_600_000);
    expect(await agrees()).toBe(true);
    let done = { ...nothing };
    for (let i = 0; i < 5 && (await agrees()); i++) {
      const c = await sweep();
      for (const k of ['timeouts', 'missed', 'transitions', 'alerts'] as const) done[k] += c[k];
    }
    expect(done.missed).toBeGreaterThan(0);
    expect(done.alerts).toBeGreaterThan(0);
    // At rest again: one statement.
    expect(await agrees()).toBe(false);
    expect(await sweep()).toEqual(nothing);
    expect(asked).toHaveLength(1);
  });
});
