import type { GuardedRollout, GuardEvidence, GuardNumbers } from '../../schemas/guarded-rollout.ts';

/**
 * Guarded rollout's rule (issue 41), pure: a production deploy's numbers since it went live against the previous live
 * deploy's over the same span from its own going live. Each threshold on its own makes the deploy degraded, as soon as
 * it is passed (a broken deploy is caught in its first minute, not at the window's end); a deploy that passed none by
 * the end of its window is healthy; before that it is being watched.
 *   new issues    at least `newIssues`, and more than the previous deploy's + `newIssuesMargin`
 *   error rate    at least `minErrorEvents` events, at `errorRateFactor` times the previous deploy's events per minute
 *                 or more (any rate when it had none)
 *   crash-free    at least `minSessions` sessions, crash-free sessions `crashFreeDropPoints` points under the previous
 *                 deploy's (100% when it had no sessions)
 */

/** What the sweep counted (crash-free null without sessions). */
export type Counted = Omit<GuardNumbers, 'errorsPerMinute'>;

export interface GuardInputs {
  settings: GuardedRollout;
  liveAt: number;
  now: number;
  current: Counted;
  /** The previous live deploy's numbers over `spanMs` from its going live; undefined for a project's first deploy. */
  previous: (Counted & { deployId: string; spanMs: number }) | undefined;
}

export type Verdict = 'watching' | 'healthy' | 'degraded';

const MINUTE = 60_000;
const perMinute = (events: number, spanMs: number) => (spanMs > 0 ? Math.round((events / (spanMs / MINUTE)) * 100) / 100 : 0);
const percent = (rate: number) => `${Math.round(rate * 1000) / 10}%`;

export function judge(i: GuardInputs): { verdict: Verdict; evidence: GuardEvidence } {
  const t = i.settings.thresholds;
  const elapsedMs = Math.max(0, i.now - i.liveAt);
  const windowMs = i.settings.windowMinutes * MINUTE;
  const prev = i.previous ?? { deployId: null, spanMs: 0, newIssues: 0, errorEvents: 0, sessions: 0, crashFreeSessions: null };
  const current = { ...i.current, errorsPerMinute: perMinute(i.current.errorEvents, elapsedMs) };
  const previous = { ...prev, errorsPerMinute: perMinute(prev.errorEvents, prev.spanMs) };
  const than = (x: string) => (previous.deployId ? `${x} in the previous deploy's same span` : 'the first deploy: nothing to compare with');
  const reasons: string[] = [];

  if (current.newIssues >= t.newIssues && current.newIssues > previous.newIssues + t.newIssuesMargin)
    reasons.push(`${current.newIssues} new issues (${than(String(previous.newIssues))}; threshold ${t.newIssues})`);

  if (current.errorEvents >= t.minErrorEvents && current.errorsPerMinute >= t.errorRateFactor * previous.errorsPerMinute)
    reasons.push(
      `${current.errorEvents} error events, ${current.errorsPerMinute}/min (${than(`${previous.errorsPerMinute}/min`)}; threshold ${t.errorRateFactor}× and ${t.minErrorEvents} events)`,
    );

  const before = previous.crashFreeSessions ?? 1;
  if (current.sessions >= t.minSessions && current.crashFreeSessions !== null && (before - current.crashFreeSessions) * 100 >= t.crashFreeDropPoints)
    reasons.push(
      `crash-free sessions ${percent(current.crashFreeSessions)} of ${current.sessions} (${than(percent(before))}; threshold ${t.crashFreeDropPoints} points)`,
    );

  const verdict: Verdict = reasons.length ? 'degraded' : elapsedMs >= windowMs ? 'healthy' : 'watching';
  return {
    verdict,
    evidence: {
      windowMinutes: i.settings.windowMinutes,
      liveAt: new Date(i.liveAt).toISOString(),
      elapsedMs: Math.min(elapsedMs, windowMs),
      current,
      previous,
      reasons,
      rolledBackTo: null,
      note: null,
    },
  };
}
