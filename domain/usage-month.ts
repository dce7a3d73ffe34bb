import type { Environment } from '../schemas/error-event.ts';

/**
 * Monthly caps (spec §7.5) count per UTC calendar month by the edge's receive time, and `unknown` is not
 * proven production, so it counts against the preview cap. The edge (to refuse early) and the processor
 * (to enforce exactly) both read these rules from here.
 */

/** The cap an environment's monthly count is held to. */
export function monthlyCapFor(caps: { productionPerMonth: number; previewPerMonth: number }, environment: Environment): number {
  return environment === 'production' ? caps.productionPerMonth : caps.previewPerMonth;
}

/** The last month seen, since the events of a batch and the requests of a second almost always share one. */
let lastMonth = { start: 0, end: -1, month: '' };

/** The UTC month `YYYY-MM` of a time: the month key of error_monthly_usage. */
export function usageMonth(epochMs: number): string {
  if (epochMs >= lastMonth.start && epochMs < lastMonth.end) return lastMonth.month;
  const d = new Date(epochMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  lastMonth = { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1), month: d.toISOString().slice(0, 7) };
  return lastMonth.month;
}

/** Whole seconds from `epochMs` to the start of the next UTC month (at least 1): Retry-After of a capped project. */
export function secondsToMonthEnd(epochMs: number): number {
  const d = new Date(epochMs);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - epochMs) / 1000));
}
