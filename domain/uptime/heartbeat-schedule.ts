import { CronExpressionParser } from 'cron-parser';
import type { MonitorSchedule } from '../../schemas/bus/client-items.ts';

/**
 * A heartbeat monitor's schedule (issue 40), as Sentry's cron monitors read it: a crontab (five fields or an @alias, in
 * the monitor's IANA time zone; parsed by cron-parser) or an interval (every N minutes ... years). Pure: the check-in
 * pipeline (processor/uptime/check-ins/) and the API (api/uptime/) validate with it, the uptime monitor computes when
 * the next check-in is due with it.
 */
export type { MonitorSchedule };

const MINUTE_MS = 60_000;
const FIXED_MS = { minute: MINUTE_MS, hour: 60 * MINUTE_MS, day: 1440 * MINUTE_MS, week: 7 * 1440 * MINUTE_MS } as const;
/** Longer intervals would name times past what a date can hold (1,000,000 years). */
const MAX_INTERVAL_MS = 3653 * 1440 * MINUTE_MS;
const ALIASES = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

/** A monitor's slug as Sentry makes one of what an SDK names it: lower case, runs of other characters as one `-`. */
export function monitorSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50);
}

/** Whether `tz` is an IANA time zone this runtime knows. */
export function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a schedule cannot be used, or undefined: a crontab of five fields (minutes and up, no seconds) or one of the
 * aliases, without `H` (cron-parser's random field: the expected time must be the same in every process).
 */
export function scheduleProblem(schedule: MonitorSchedule, timezone: string): string | undefined {
  if (!validTimezone(timezone)) return `unknown time zone ${JSON.stringify(timezone.slice(0, 64))}`;
  if (schedule.type === 'interval') {
    const from = Date.UTC(2026, 0, 1);
    const next = nextScheduled(schedule, timezone, from);
    return Number.isFinite(next) && next - from <= MAX_INTERVAL_MS ? undefined : 'an interval is at most 10 years';
  }
  const text = schedule.value.trim();
  if (text.startsWith('@')) return ALIASES.has(text.toLowerCase()) ? undefined : `unknown crontab alias ${JSON.stringify(text)}`;
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return 'a crontab has five fields (minute hour day-of-month month day-of-week)';
  // `H` (a random minute or hour per process) may not be used; THU is the one name holding an h.
  if (fields.some((f) => /h/i.test(f.replace(/thu/gi, '')))) return 'a crontab may not use H';
  try {
    CronExpressionParser.parse(text, { tz: timezone, currentDate: new Date(Date.UTC(2026, 0, 1)) }).next();
    return undefined;
  } catch (err) {
    return `not a crontab: ${(err as Error).message}`.slice(0, 200);
  }
}

/** The first time the schedule names strictly after `after` (epoch ms). The schedule must have passed scheduleProblem. */
export function nextScheduled(schedule: MonitorSchedule, timezone: string, after: number): number {
  if (schedule.type === 'interval') {
    const { value, unit } = schedule;
    if (unit === 'month' || unit === 'year') {
      const d = new Date(after);
      if (unit === 'month') d.setUTCMonth(d.getUTCMonth() + value);
      else d.setUTCFullYear(d.getUTCFullYear() + value);
      return d.getTime();
    }
    return after + value * FIXED_MS[unit];
  }
  const text = schedule.value.trim().toLowerCase() === '@midnight' ? '@daily' : schedule.value.trim();
  return CronExpressionParser.parse(text, { tz: timezone, currentDate: new Date(after) })
    .next()
    .getTime();
}

/**
 * When a check-in at `at` makes the next one expected. A check-in up to the margin (at least a minute) before the time
 * it was expected is that one, early: the next is the first scheduled time after the expected one.
 */
export function nextExpectedAfterCheckIn(schedule: MonitorSchedule, timezone: string, at: number, expectedAt: number | null, marginMin: number): number {
  const early = expectedAt !== null && at < expectedAt && at >= expectedAt - Math.max(1, marginMin) * MINUTE_MS;
  return nextScheduled(schedule, timezone, early ? expectedAt : at);
}
