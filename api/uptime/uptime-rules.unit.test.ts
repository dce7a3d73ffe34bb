import { describe, expect, it } from 'vitest';
import { CreateMonitorBody, UpdateMonitorBody } from '../../schemas/api/uptime.ts';
import type { MonitorRow } from './uptime-repository.ts';
import { changedMonitorValues, newMonitorValues } from './uptime-rules.ts';

const was: MonitorRow = {
  id: 'mon_1',
  project_id: 'prj_1',
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
