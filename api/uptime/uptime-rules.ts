import type { z } from 'zod';
import type { CreateMonitorBody, UpdateMonitorBody } from '../../schemas/api/uptime.ts';
import type { MonitorRow, MonitorValues } from './uptime-repository.ts';

/** What a monitor is saved with: a check's timeout never outlasts its interval. */
const capped = (v: MonitorValues): MonitorValues => ({ ...v, timeoutMs: Math.min(v.timeoutMs, v.intervalSec * 1000) });

/** A new monitor's values: the body (its defaults filled in by the schema) with the URL the outbound guard passed. */
export function newMonitorValues(b: z.output<typeof CreateMonitorBody>, url: string): MonitorValues {
  const { expectedStatus, ...rest } = b;
  return capped({ ...rest, url, expectedMin: expectedStatus.min, expectedMax: expectedStatus.max });
}

/**
 * A change merged into the monitor it changes: what the change names, the rest as it was. `checkNow`: the change
 * resumes a paused monitor, which is then checked at once with its failure count cleared.
 */
export function changedMonitorValues(was: MonitorRow, b: z.output<typeof UpdateMonitorBody>, url: string): { values: MonitorValues; checkNow: boolean } {
  const values = capped({
    name: b.name ?? was.name,
    url,
    method: b.method ?? was.method,
    intervalSec: b.intervalSec ?? was.interval_sec,
    timeoutMs: b.timeoutMs ?? was.timeout_ms,
    expectedMin: b.expectedStatus?.min ?? was.expected_min,
    expectedMax: b.expectedStatus?.max ?? was.expected_max,
    bodyContains: b.bodyContains === undefined ? was.body_contains : b.bodyContains,
    failuresToDown: b.failuresToDown ?? was.failures_to_down,
    public: b.public ?? was.public,
    showUrl: b.showUrl ?? was.show_url,
    paused: b.paused ?? was.paused,
  });
  return { values, checkNow: b.paused === false && was.paused };
}
