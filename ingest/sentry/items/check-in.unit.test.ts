import { beforeAll, describe, expect, it } from 'vitest';
import { CheckInItemSchema } from '../../../schemas/bus/client-items.ts';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { checkInOfSentry } from './check-in.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});
const NOW = Date.UTC(2026, 10, 26, 12);

describe('a Sentry check_in item as a check-in', () => {
  it("maps captureCheckIn's in_progress with a crontab monitor_config, and its closing ok with the same id and a duration", () => {
    const [open] = payloadsOf(sdk.checkInCrontab, 'check_in') as Array<Record<string, unknown>>;
    const c = checkInOfSentry(open, NOW)!;
    expect(c).toEqual({
      checkInId: open!.check_in_id,
      monitorSlug: 'nightly-report',
      status: 'in_progress',
      timestamp: NOW,
      release: 'abc1234',
      environment: 'production',
      monitorConfig: {
        schedule: { type: 'crontab', value: '0 3 * * *' },
        checkinMargin: 5,
        maxRuntime: 30,
        timezone: 'Europe/Paris',
        failureIssueThreshold: 2,
        recoveryThreshold: 1,
      },
    });
    expect(CheckInItemSchema.parse(c)).toEqual(c);
    const [close] = payloadsOf(sdk.checkInOk, 'check_in');
    expect(checkInOfSentry(close, NOW)).toMatchObject({ checkInId: open!.check_in_id, status: 'ok', duration: 12.5 });
    expect(checkInOfSentry(close, NOW)!.monitorConfig).toBeUndefined();
  });

  it('maps an interval schedule', () => {
    const [raw] = payloadsOf(sdk.checkInInterval, 'check_in');
    expect(checkInOfSentry(raw, NOW)).toMatchObject({ status: 'error', monitorConfig: { schedule: { type: 'interval', value: 10, unit: 'minute' } } });
  });

  it('leaves out a config with no valid schedule and settings out of range, and refuses a check-in without id, slug or known status', () => {
    const base = { check_in_id: 'c1', monitor_slug: 'm', status: 'ok' };
    expect(checkInOfSentry({ ...base, monitor_config: { schedule: { type: 'interval', value: 10, unit: 'fortnight' } } }, NOW)!.monitorConfig).toBeUndefined();
    expect(checkInOfSentry({ ...base, monitor_config: { schedule: { type: 'crontab' } } }, NOW)!.monitorConfig).toBeUndefined();
    const c = checkInOfSentry(
      {
        ...base,
        duration: -1,
        monitor_config: { schedule: { type: 'crontab', value: '* * * * *' }, checkin_margin: -3, max_runtime: 1e9, failure_issue_threshold: 2.5 },
      },
      NOW,
    )!;
    expect(c.duration).toBeUndefined();
    expect(c.monitorConfig).toEqual({ schedule: { type: 'crontab', value: '* * * * *' } });
    expect(CheckInItemSchema.safeParse(c).success).toBe(true);
    expect(checkInOfSentry({ ...base, status: 'missed' }, NOW)).toBeUndefined();
    expect(checkInOfSentry({ ...base, monitor_slug: '' }, NOW)).toBeUndefined();
    expect(checkInOfSentry({ ...base, check_in_id: 7 }, NOW)).toBeUndefined();
  });
});
