import type { HealthTotals } from '../../schemas/api/release-health.ts';

/**
 * Sentry's release-health numbers from one row of the repository's counts (release-health-repository.ts METRICS):
 * per-session counts of updates (`_u`, distinct session ids) and sums of aggregates (`_a`). Errored sessions are those
 * that saw an error and neither crashed nor ended abnormally. A session that ended in an unhandled error
 * (@sentry/browser 10+ says `unhandled` where older SDKs said `crashed`: a page goes on after one) counts as crashed,
 * as Sentry's frontend release health counts unhandled errors as crashes; `unhandled` is that part. Crash-free rates are clamped to [0, 1] (a crash whose
 * init update was lost must not make a rate negative) and null without sessions or users.
 */
export type MetricRow = Record<
  | 'started_u'
  | 'started_a'
  | 'crashed_u'
  | 'crashed_a'
  | 'unhandled_u'
  | 'unhandled_a'
  | 'abnormal_u'
  | 'abnormal_a'
  | 'errored_all_u'
  | 'errored_a'
  | 'users'
  | 'crashed_users',
  number | string
>;

/** Sentry's numbers from one row of METRICS. */
export function totalsOf(row: MetricRow | undefined): HealthTotals {
  const n = (k: keyof MetricRow) => Number(row?.[k] ?? 0);
  const sessions = n('started_u') + n('started_a');
  const crashed = n('crashed_u') + n('crashed_a');
  const abnormal = n('abnormal_u') + n('abnormal_a');
  const errored = Math.max(0, n('errored_all_u') - n('crashed_u') - n('abnormal_u')) + n('errored_a');
  const users = n('users');
  const crashedUsers = n('crashed_users');
  const rate = (bad: number, all: number) => (all > 0 ? Math.min(1, Math.max(0, 1 - bad / all)) : null);
  return {
    sessions,
    crashed,
    unhandled: n('unhandled_u') + n('unhandled_a'),
    errored,
    abnormal,
    healthy: Math.max(0, sessions - crashed - errored - abnormal),
    crashFreeSessions: rate(crashed, sessions),
    users,
    crashedUsers,
    crashFreeUsers: rate(crashedUsers, users),
  };
}
