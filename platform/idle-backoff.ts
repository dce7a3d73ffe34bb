/**
 * Nothing polls when nothing happens (issue 44): a periodic look (a claim of due rows, a queue poll) that found
 * nothing waits longer before the next one, doubling from the timer's period up to a cap, and is back at the period
 * as soon as a look finds work or something wakes it (a message on the bus, a build ending). The timer itself keeps
 * its period; only the query is skipped while backing off, so whatever else its tick does keeps its schedule.
 */

/** The wait after `idleLooks` looks in a row found nothing: the period, doubled each time, at most `capMs`. */
export function idleBackoffMs(periodMs: number, capMs: number, idleLooks: number): number {
  if (idleLooks <= 0) return periodMs;
  return Math.min(capMs, periodMs * 2 ** Math.min(idleLooks, 30));
}

export interface IdleBackoff {
  /** Whether to look now (monotonic ms, e.g. performance.now()). */
  due(nowMs: number): boolean;
  /** After a look: whether it found work, and when it was made. */
  looked(found: boolean, nowMs: number): void;
  /** Something happened: look at the next tick. */
  wake(): void;
  /** Looks in a row that found nothing (metrics, tests). */
  readonly idleLooks: number;
}

export function idleBackoff(periodMs: number, capMs: number): IdleBackoff {
  let idle = 0;
  let nextAt = Number.NEGATIVE_INFINITY;
  return {
    // A tick that comes a little early (timer jitter) still looks: half a period of slack.
    due: (nowMs) => nowMs + periodMs / 2 >= nextAt,
    looked(found, nowMs) {
      idle = found ? 0 : idle + 1;
      nextAt = idle ? nowMs + idleBackoffMs(periodMs, capMs, idle) : Number.NEGATIVE_INFINITY;
    },
    wake() {
      idle = 0;
      nextAt = Number.NEGATIVE_INFINITY;
    },
    get idleLooks() {
      return idle;
    },
  };
}
