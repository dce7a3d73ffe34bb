import { describe, expect, it } from 'vitest';
import { CreateHeartbeatBody, CreateMonitorBody, UpdateMonitorBody } from '../../schemas/api/uptime.ts';
import type { MonitorRow } from './uptime-repository.ts';
import { changedHeartbeatValues, changedMonitorValues, misplacedFields, newHeartbeatValues, newMonitorValues } from './uptime-rules.ts';

const was: MonitorRow = {
  id: 'mon_1',
  project_id: 'prj_1',
  kind: 'url',
  slug: null,
  schedule: null,
  timezone: null,
  checkin_margin_min: null,
  max_runtime_min: null,
  recoveries_to_up: 1,
  expected_at: null,
  last_check_in_at: null,
  last_check_in_status: null,
  name: 'Shop',
  url: 'https://shop.example/health',
  method: 'GET',
  interval_sec: 60,
  timeout_ms: 10_000,
  expected_min: 200,
  expected_max: 399,
  body_contains: 'ok',
  failures_to_down: 2,
  public: true,
  show_url: false,
  paused: true,
  site: false,
  state: 'up',
  last_check_at: null,
  last_ok: null,
  last_status: null,
  last_ms: null,
  last_error: null,
  created_at: '2026-01-01T00:00:00Z',
};

describe('uptime rules', () => {
  it('a new monitor takes the body with its defaults and the guarded URL', () => {
    const v = newMonitorValues(CreateMonitorBody.parse({ name: 'Shop', url: 'https://typed.example' }), 'https://shop.example/');
    expect(v).toEqual({
      name: 'Shop',
      url: 'https://shop.example/',
      method: 'GET',
      intervalSec: 60,
      timeoutMs: 10_000,
      expectedMin: 200,
      expectedMax: 399,
      bodyContains: null,
      failuresToDown: 2,
      public: false,
      showUrl: false,
      paused: false,
    });
  });

  it("a check's timeout never outlasts its interval (today's limits keep them apart; the rule holds if they change)", () => {
    const body = { ...CreateMonitorBody.parse({ name: 'Shop', url: 'https://shop.example/' }), intervalSec: 5, timeoutMs: 9000 };
    expect(newMonitorValues(body, body.url).timeoutMs).toBe(5000);
    expect(changedMonitorValues({ ...was, interval_sec: 5, timeout_ms: 9000 }, {}, was.url).values.timeoutMs).toBe(5000);
  });

  it('a change keeps what it does not name and clears bodyContains with null', () => {
    const { values } = changedMonitorValues(was, UpdateMonitorBody.parse({ intervalSec: 120, bodyContains: null }), 'https://new.example/');
    expect(values).toMatchObject({
      name: 'Shop',
      url: 'https://new.example/',
      intervalSec: 120,
      timeoutMs: 10_000,
      bodyContains: null,
      public: true,
      paused: true,
    });
    expect(changedMonitorValues(was, UpdateMonitorBody.parse({}), was.url).values.bodyContains).toBe('ok');
  });

  it('resuming a paused monitor checks it at once; pausing, or resuming one that runs, does not', () => {
    expect(changedMonitorValues(was, UpdateMonitorBody.parse({ paused: false }), was.url).checkNow).toBe(true);
    expect(changedMonitorValues(was, UpdateMonitorBody.parse({ paused: true }), was.url).checkNow).toBe(false);
    expect(changedMonitorValues({ ...was, paused: false }, UpdateMonitorBody.parse({ paused: false }), was.url).checkNow).toBe(false);
  });
});

describe('heartbeat rules', () => {
  const now = Date.UTC(2026, 10, 25, 12, 30, 0);
  const heartbeat: MonitorRow = {
    ...was,
    id: 'mon_2',
    kind: 'heartbeat',
    name: 'nightly',
    url: '',
    slug: 'nightly',
    schedule: { type: 'crontab', value: '0 3 * * *' },
    timezone: 'UTC',
    checkin_margin_min: 5,
    max_runtime_min: 30,
    paused: false,
    expected_at: new Date(Date.UTC(2026, 10, 26, 3, 0, 0)),
  };

  it("makes a heartbeat with Sentry's defaults, its first check-in expected at the next scheduled time; refuses a schedule that cannot be used", () => {
    const v = newHeartbeatValues(CreateHeartbeatBody.parse({ kind: 'heartbeat', slug: 'nightly', schedule: { type: 'crontab', value: '0 3 * * *' } }), now);
    expect(v).toEqual({
      slug: 'nightly',
      name: 'nightly',
      schedule: { type: 'crontab', value: '0 3 * * *' },
      timezone: 'UTC',
      checkinMarginMin: 1,
      maxRuntimeMin: 30,
      failuresToDown: 1,
      recoveriesToUp: 1,
      public: false,
      paused: false,
      expectedAt: Date.UTC(2026, 10, 26, 3, 0, 0),
    });
    const bad = (schedule: unknown, timezone?: string) =>
      newHeartbeatValues(CreateHeartbeatBody.parse({ kind: 'heartbeat', slug: 'x', schedule, ...(timezone ? { timezone } : {}) }), now);
    expect(bad({ type: 'crontab', value: '61 * * * *' })).toHaveProperty('problem');
    expect(bad({ type: 'crontab', value: '0 0 3 * * *' })).toHaveProperty('problem');
    expect(bad({ type: 'crontab', value: 'H * * * *' })).toHaveProperty('problem');
    expect(bad({ type: 'crontab', value: '0 3 * * *' }, 'Mars/Olympus')).toHaveProperty('problem');
    expect(bad({ type: 'crontab', value: '0 3 * * THU' })).not.toHaveProperty('problem');
  });

  it('keeps the expected time on a change that leaves the schedule be, moves it on a new schedule or a resume', () => {
    const kept = changedHeartbeatValues(heartbeat, UpdateMonitorBody.parse({ name: 'Nightly', checkinMarginMin: 10 }), now);
    expect(kept).toMatchObject({ name: 'Nightly', checkinMarginMin: 10, expectedAt: Date.UTC(2026, 10, 26, 3, 0, 0) });
    const moved = changedHeartbeatValues(heartbeat, UpdateMonitorBody.parse({ schedule: { type: 'interval', value: 2, unit: 'hour' } }), now);
    expect(moved).toMatchObject({ expectedAt: now + 2 * 3_600_000 });
    const resumed = changedHeartbeatValues({ ...heartbeat, paused: true }, UpdateMonitorBody.parse({ paused: false }), now);
    expect(resumed).toMatchObject({ paused: false, expectedAt: Date.UTC(2026, 10, 26, 3, 0, 0) });
    const tz = changedHeartbeatValues(heartbeat, UpdateMonitorBody.parse({ timezone: 'America/New_York' }), now);
    expect(tz).toMatchObject({ expectedAt: Date.UTC(2026, 10, 26, 8, 0, 0) });
  });

  it('names the fields of a change that belong to the other kind', () => {
    expect(misplacedFields('heartbeat', UpdateMonitorBody.parse({ url: 'https://x.example/', name: 'a' }))).toEqual(['url']);
    expect(misplacedFields('url', UpdateMonitorBody.parse({ schedule: { type: 'crontab', value: '* * * * *' }, paused: true }))).toEqual(['schedule']);
    expect(misplacedFields('url', UpdateMonitorBody.parse({ name: 'b', paused: true }))).toEqual([]);
  });
});
