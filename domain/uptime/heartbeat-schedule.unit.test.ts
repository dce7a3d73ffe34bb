import { describe, expect, it } from 'vitest';
import { monitorSlug, nextExpectedAfterCheckIn, nextScheduled, scheduleProblem } from './heartbeat-schedule.ts';

const at = (iso: string) => Date.parse(iso);

describe('heartbeat schedules', () => {
  it('slugs a monitor name as Sentry does', () => {
    expect(monitorSlug('Nightly Backup!')).toBe('nightly-backup');
    expect(monitorSlug('db_vacuum-2')).toBe('db_vacuum-2');
    expect(monitorSlug('***')).toBe('');
    expect(monitorSlug('x'.repeat(80))).toHaveLength(50);
  });

  it('takes five-field crontabs and the aliases in an IANA time zone; refuses seconds, H, bad fields and unknown zones', () => {
    expect(scheduleProblem({ type: 'crontab', value: '*/5 * * * *' }, 'UTC')).toBeUndefined();
    expect(scheduleProblem({ type: 'crontab', value: '@daily' }, 'Europe/Paris')).toBeUndefined();
    expect(scheduleProblem({ type: 'crontab', value: '0 9 * * MON-FRI' }, 'UTC')).toBeUndefined();
    expect(scheduleProblem({ type: 'crontab', value: '0 9 * * THU' }, 'UTC')).toBeUndefined();
    expect(scheduleProblem({ type: 'crontab', value: '0 0 9 * * *' }, 'UTC')).toMatch(/five fields/);
    expect(scheduleProblem({ type: 'crontab', value: 'H 9 * * *' }, 'UTC')).toMatch(/H/);
    expect(scheduleProblem({ type: 'crontab', value: '0 25 * * *' }, 'UTC')).toMatch(/not a crontab/);
    expect(scheduleProblem({ type: 'crontab', value: '@secondly' }, 'UTC')).toMatch(/alias/);
    expect(scheduleProblem({ type: 'crontab', value: '0 9 * * *' }, 'Nowhere/Town')).toMatch(/time zone/);
    expect(scheduleProblem({ type: 'interval', value: 3, unit: 'hour' }, 'UTC')).toBeUndefined();
    expect(scheduleProblem({ type: 'interval', value: 10, unit: 'year' }, 'UTC')).toBeUndefined();
    expect(scheduleProblem({ type: 'interval', value: 1_000_000, unit: 'year' }, 'UTC')).toMatch(/10 years/);
    expect(scheduleProblem({ type: 'interval', value: 1_000_000, unit: 'week' }, 'UTC')).toMatch(/10 years/);
  });

  it('names the next time of a crontab in its zone, and of an interval (calendar months)', () => {
    expect(nextScheduled({ type: 'crontab', value: '0 * * * *' }, 'UTC', at('2026-11-25T12:00:00Z'))).toBe(at('2026-11-25T13:00:00Z'));
    expect(nextScheduled({ type: 'crontab', value: '0 3 * * *' }, 'America/Los_Angeles', at('2026-11-25T12:00:00Z'))).toBe(at('2026-11-26T11:00:00Z'));
    expect(nextScheduled({ type: 'crontab', value: '@midnight' }, 'UTC', at('2026-11-25T12:00:00Z'))).toBe(at('2026-11-26T00:00:00Z'));
    expect(nextScheduled({ type: 'interval', value: 10, unit: 'minute' }, 'UTC', at('2026-11-25T12:00:00Z'))).toBe(at('2026-11-25T12:10:00Z'));
    expect(nextScheduled({ type: 'interval', value: 1, unit: 'month' }, 'UTC', at('2026-11-25T12:00:00Z'))).toBe(at('2026-12-25T12:00:00Z'));
  });

  it('takes a check-in shortly before its expected time as that one, not as an extra run', () => {
    const hourly = { type: 'crontab', value: '0 * * * *' } as const;
    const expected = at('2026-11-25T13:00:00Z');
    expect(nextExpectedAfterCheckIn(hourly, 'UTC', at('2026-11-25T12:59:30Z'), expected, 1)).toBe(at('2026-11-25T14:00:00Z'));
    expect(nextExpectedAfterCheckIn(hourly, 'UTC', at('2026-11-25T13:00:20Z'), expected, 1)).toBe(at('2026-11-25T14:00:00Z'));
    expect(nextExpectedAfterCheckIn(hourly, 'UTC', at('2026-11-25T12:30:00Z'), expected, 1)).toBe(expected);
    expect(nextExpectedAfterCheckIn(hourly, 'UTC', at('2026-11-25T12:30:00Z'), null, 1)).toBe(expected);
  });
});
