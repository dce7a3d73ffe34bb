import { MonitorScheduleSchema, type CheckInItem, type MonitorConfig, type MonitorSchedule } from '../../../schemas/bus/client-items.ts';
import { intIn, obj, releaseAndEnvironment, seconds, text } from './item-fields.ts';

/**
 * A Sentry `check_in` item (@sentry/core's captureCheckIn, `withMonitor`) as the bus's CheckInItem:
 *   { check_in_id, monitor_slug, status: in_progress|ok|error, duration?, release?, environment?,
 *     monitor_config?: { schedule: { type: 'crontab', value } | { type: 'interval', value, unit },
 *                        checkin_margin?, max_runtime?, timezone?, failure_issue_threshold?, recovery_threshold? } }
 * A check-in carries no time of its own: it is `receivedAt`. A monitor_config whose schedule is not one of the two
 * forms is left out (the check-in is kept); a setting out of its range is left out of the config.
 */
const STATUSES = new Set(['in_progress', 'ok', 'error']);

function scheduleOf(input: unknown): MonitorSchedule | undefined {
  const s = obj(input);
  if (s?.type === 'crontab') {
    const value = text(s.value, 128);
    return value ? { type: 'crontab', value } : undefined;
  }
  const parsed = MonitorScheduleSchema.safeParse(s && { type: s.type, value: s.value, unit: s.unit });
  return parsed.success ? parsed.data : undefined;
}

export function monitorConfigOfSentry(input: unknown): MonitorConfig | undefined {
  const c = obj(input);
  const schedule = scheduleOf(c?.schedule);
  if (!c || !schedule) return undefined;
  const out: MonitorConfig = { schedule };
  const margin = intIn(c.checkin_margin, 0, 40_320);
  const maxRuntime = intIn(c.max_runtime, 1, 40_320);
  const timezone = text(c.timezone, 64);
  const failure = intIn(c.failure_issue_threshold, 1, 720);
  const recovery = intIn(c.recovery_threshold, 1, 720);
  if (margin !== undefined) out.checkinMargin = margin;
  if (maxRuntime !== undefined) out.maxRuntime = maxRuntime;
  if (timezone) out.timezone = timezone;
  if (failure !== undefined) out.failureIssueThreshold = failure;
  if (recovery !== undefined) out.recoveryThreshold = recovery;
  return out;
}

export function checkInOfSentry(input: unknown, receivedAt: number): CheckInItem | undefined {
  const c = obj(input);
  const checkInId = text(c?.check_in_id, 128);
  const monitorSlug = text(c?.monitor_slug, 128);
  if (!c || !checkInId || !monitorSlug || typeof c.status !== 'string' || !STATUSES.has(c.status)) return undefined;
  const out: CheckInItem = { checkInId, monitorSlug, status: c.status as CheckInItem['status'], timestamp: receivedAt, ...releaseAndEnvironment(c) };
  const duration = seconds(c.duration);
  if (duration !== undefined) out.duration = duration;
  const config = monitorConfigOfSentry(c.monitor_config);
  if (config) out.monitorConfig = config;
  return out;
}
