import { describe, expect, it } from 'vitest';
import { guardedRolloutOf } from '../../schemas/guarded-rollout.ts';
import { judge, type Counted, type GuardInputs } from './guard-verdict.ts';

/** Guarded rollout's rule: each threshold on its own, judged during the window, healthy at its end. */
const MINUTE = 60_000;
const none: Counted = { newIssues: 0, errorEvents: 0, sessions: 0, crashFreeSessions: null };
const at = (over: Partial<Omit<GuardInputs, 'current'>> & { current?: Partial<Counted>; prev?: Partial<Counted> | null } = {}) =>
  judge({
    settings: guardedRolloutOf({}),
    liveAt: 0,
    now: 2 * MINUTE,
    previous: over.prev === null ? undefined : { ...none, ...over.prev, deployId: 'dep_prev', spanMs: 2 * MINUTE },
    ...over,
    current: { ...none, ...over.current },
  });

describe('guard verdict', () => {
  it('watching before the window ends, healthy at its end, with nothing passed', () => {
    expect(at().verdict).toBe('watching');
    expect(at({ now: 10 * MINUTE }).verdict).toBe('healthy');
    expect(at({ now: 10 * MINUTE }).evidence).toMatchObject({ windowMinutes: 10, elapsedMs: 10 * MINUTE, reasons: [], previous: { deployId: 'dep_prev' } });
  });

  it('new issues: at least 3 and more than the previous deploy’s + 2', () => {
    expect(at({ current: { newIssues: 2 } }).verdict).toBe('watching');
    expect(at({ current: { newIssues: 3 } }).verdict).toBe('degraded');
    expect(at({ current: { newIssues: 3 }, prev: { newIssues: 1 } }).verdict).toBe('watching');
    expect(at({ current: { newIssues: 4 }, prev: { newIssues: 1 } }).evidence.reasons).toEqual([expect.stringMatching(/^4 new issues \(1 in the previous/)]);
  });

  it('error rate: at least 10 events, at twice the previous rate per minute (any rate when it had none)', () => {
    expect(at({ current: { errorEvents: 9 } }).verdict).toBe('watching');
    expect(at({ current: { errorEvents: 10 } }).verdict).toBe('degraded');
    expect(at({ current: { errorEvents: 10 }, prev: { errorEvents: 6 } }).verdict).toBe('watching');
    expect(at({ current: { errorEvents: 12 }, prev: { errorEvents: 6 } }).verdict).toBe('degraded');
    // Rates, not counts: the previous deploy's span was shorter (it was live only one minute before this one).
    const shortSpan = judge({
      settings: guardedRolloutOf({}),
      liveAt: 0,
      now: 4 * MINUTE,
      current: { ...none, errorEvents: 20 },
      previous: { ...none, errorEvents: 4, deployId: 'dep_prev', spanMs: MINUTE },
    });
    expect(shortSpan.verdict).toBe('watching');
    expect(shortSpan.evidence.current.errorsPerMinute).toBe(5);
    expect(shortSpan.evidence.previous.errorsPerMinute).toBe(4);
  });

  it('crash-free sessions: 5 points under the previous deploy’s, with at least 20 sessions', () => {
    expect(at({ current: { sessions: 19, crashFreeSessions: 0.5 } }).verdict).toBe('watching');
    expect(at({ current: { sessions: 20, crashFreeSessions: 0.94 }, prev: { sessions: 100, crashFreeSessions: 0.99 } }).verdict).toBe('degraded');
    expect(at({ current: { sessions: 20, crashFreeSessions: 0.95 }, prev: { sessions: 100, crashFreeSessions: 0.99 } }).verdict).toBe('watching');
    // No sessions before: compared with 100%.
    expect(at({ current: { sessions: 40, crashFreeSessions: 0.9 }, prev: null }).evidence.reasons).toEqual([
      expect.stringMatching(/^crash-free sessions 90% of 40/),
    ]);
  });

  it('thresholds as the project set them', () => {
    const settings = guardedRolloutOf({ windowMinutes: 1, thresholds: { minErrorEvents: 100 } });
    expect(judge({ settings, liveAt: 0, now: 30_000, current: { ...none, errorEvents: 50 }, previous: undefined }).verdict).toBe('watching');
    expect(judge({ settings, liveAt: 0, now: MINUTE, current: { ...none, errorEvents: 50 }, previous: undefined }).verdict).toBe('healthy');
  });

  it('a stored setting no longer valid reads as the defaults', () => {
    expect(guardedRolloutOf({ windowMinutes: 600 }).windowMinutes).toBe(10);
    expect(guardedRolloutOf(null).autoRollback).toBe(false);
  });
});
