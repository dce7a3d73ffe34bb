import type { HealthPoint, HealthTotals } from '../../../schemas/api/release-health.ts';
import { countOf } from '../ui.tsx';

/**
 * Release health in the console (issue 40): crash-free sessions and users as Sentry shows them, for the deploys list,
 * a deploy's page and the project overview. The numbers come from the release-health routes
 * (schemas/api/release-health.ts); a rate is null where no session (or no user) was counted, shown as a dash.
 */
export function pct(rate: number | null): string {
  if (rate === null) return '–';
  // Sentry's precision: two decimals below 100 %, so 99.99 % does not read as 100 %.
  const p = rate * 100;
  return p === 100 ? '100%' : `${(Math.floor(p * 100 + 1e-6) / 100).toFixed(2)}%`;
}

export function CrashFree({ t, of }: { t: HealthTotals | undefined; of: 'sessions' | 'users' }) {
  if (!t || (of === 'sessions' ? t.sessions : t.users) === 0) return <span class="muted">–</span>;
  const rate = of === 'sessions' ? t.crashFreeSessions : t.crashFreeUsers;
  const title =
    of === 'sessions'
      ? `${countOf(t.crashed, 'crashed session')} of ${countOf(t.sessions, 'session')}`
      : `${countOf(t.crashedUsers, 'user')} with a crash of ${countOf(t.users, 'user')}`;
  return (
    <span class={`crash-free ${rate !== null && rate < 0.99 ? 'bad' : 'ok'}`} title={title}>
      {pct(rate)}
    </span>
  );
}

/** The totals as a line of facts: sessions, crash-free sessions and users, and the breakdown. */
export function HealthFacts({ t }: { t: HealthTotals }) {
  return (
    <dl class="facts health-facts">
      <div>
        <dt>Crash-free sessions</dt>
        <dd>
          <CrashFree t={t} of="sessions" />
        </dd>
      </div>
      <div>
        <dt>Crash-free users</dt>
        <dd>
          <CrashFree t={t} of="users" />
        </dd>
      </div>
      <div>
        <dt>Sessions</dt>
        <dd>
          {t.sessions.toLocaleString()}{' '}
          <span class="muted">
            ({t.crashed.toLocaleString()} crashed{t.unhandled ? `, ${t.unhandled.toLocaleString()} of them unhandled errors` : ''} ·{' '}
            {t.errored.toLocaleString()} errored · {t.abnormal.toLocaleString()} abnormal)
          </span>
        </dd>
      </div>
      <div>
        <dt>Users</dt>
        <dd>{t.users.toLocaleString()}</dd>
      </div>
    </dl>
  );
}

/**
 * Crash-free sessions per bucket as a line on a scale from the lowest rate seen (at most 90 %) to 100 %; a bucket
 * without sessions breaks the line, so a quiet night is not drawn as perfect health.
 */
export function CrashFreeChart({ series, interval, label }: { series: HealthPoint[]; interval: 'hour' | 'day'; label: string }) {
  const rates = series.map((p) => p.crashFreeSessions).filter((r): r is number => r !== null);
  if (!rates.length) return <p class="empty">No sessions in this range.</p>;
  const floor = Math.min(0.9, Math.floor(Math.min(...rates) * 100) / 100);
  const w = 100 / Math.max(1, series.length - 1);
  const y = (r: number) => 40 - ((r - floor) / (1 - floor)) * 38 - 1;
  const runs: string[][] = [];
  let run: string[] = [];
  series.forEach((p, i) => {
    if (p.crashFreeSessions === null) {
      if (run.length) runs.push(run);
      run = [];
    } else run.push(`${(i * w).toFixed(2)},${y(p.crashFreeSessions).toFixed(2)}`);
  });
  if (run.length) runs.push(run);
  const when = (iso: string) =>
    new Date(iso).toLocaleString(
      [],
      interval === 'hour' ? { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' } : { month: 'short', day: 'numeric' },
    );
  const last = [...series].reverse().find((p) => p.crashFreeSessions !== null)!;
  return (
    <figure class="chart health-chart">
      <div class="chart-body">
        <div class="y-axis" aria-hidden="true">
          <span>100%</span>
          <span>{pct((1 + floor) / 2)}</span>
          <span>{pct(floor)}</span>
        </div>
        <svg viewBox="0 0 100 40" preserveAspectRatio="none" role="img" aria-label={label}>
          <line class="grid" x1="0" x2="100" y1="20" y2="20" />
          <line class="baseline" x1="0" x2="100" y1="40" y2="40" />
          {runs.map((r) =>
            r.length === 1 ? (
              <circle key={r[0]} class="health-dot" cx={r[0]!.split(',')[0]} cy={r[0]!.split(',')[1]} r="0.8" />
            ) : (
              <polyline key={r[0]} class="health-line" points={r.join(' ')} />
            ),
          )}
          {series.map((p, i) =>
            p.crashFreeSessions === null ? null : (
              <rect key={p.bucket} class="health-hit" x={i * w - w / 2} y="0" width={w} height="40">
                <title>{`${new Date(p.bucket).toLocaleString()}: ${pct(p.crashFreeSessions)} crash-free, ${countOf(p.sessions, 'session')}, ${countOf(p.crashed, 'crash')}`}</title>
              </rect>
            ),
          )}
        </svg>
      </div>
      <div class="x-axis" aria-hidden="true">
        <span style={{ width: '50%', textAlign: 'left' }}>{when(series[0]!.bucket)}</span>
        <span style={{ width: '50%', textAlign: 'right' }}>{when(series[series.length - 1]!.bucket)}</span>
      </div>
      <figcaption class="muted">
        Crash-free sessions per {interval}, by when each session started; latest {pct(last.crashFreeSessions)} ({when(last.bucket)}).
      </figcaption>
    </figure>
  );
}
