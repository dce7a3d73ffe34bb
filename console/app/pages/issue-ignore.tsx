import { useState } from 'preact/hooks';
import type { IgnoreIssueBody, Issue } from '../../../schemas/api/errors.ts';
import { Time } from '../ui.tsx';

/**
 * Ignore until (issue 41): the issue page's ignore conditions (Sentry's: N events, N users, a duration, escalation) and
 * what the issue says about them: "Ignored until …" while ignored, why it came back after, and whether it is escalating.
 */
export const IGNORE_CHOICES: Array<{ label: string; body: NonNullable<IgnoreIssueBody> | null }> = [
  { label: 'Forever', body: null },
  { label: 'Until escalating', body: { ignoreUntilEscalating: true } },
  { label: 'For 1 hour', body: { ignoreDuration: 60 } },
  { label: 'For 24 hours', body: { ignoreDuration: 1440 } },
  { label: 'For 7 days', body: { ignoreDuration: 10_080 } },
  { label: 'Until 100 more events', body: { ignoreCount: 100 } },
  { label: 'Until 1,000 more events', body: { ignoreCount: 1000 } },
  { label: 'Until 10 more users', body: { ignoreUserCount: 10 } },
  { label: 'Until 100 more users', body: { ignoreUserCount: 100 } },
  { label: 'Until 1,000 more users', body: { ignoreUserCount: 1000 } },
];

/** The Ignore button with its condition. */
export function IgnoreControl(props: { busy: boolean; onIgnore: (body: NonNullable<IgnoreIssueBody> | null) => void }) {
  const [choice, setChoice] = useState(0);
  return (
    <span class="ignore-control">
      <select aria-label="Ignore for how long" value={String(choice)} onChange={(e) => setChoice(Number(e.currentTarget.value))}>
        {IGNORE_CHOICES.map((c, i) => (
          <option key={c.label} value={String(i)}>
            {c.label}
          </option>
        ))}
      </select>
      <button type="button" disabled={props.busy} onClick={() => props.onIgnore(IGNORE_CHOICES[choice]!.body)} aria-keyshortcuts="i">
        Ignore
      </button>
    </span>
  );
}

const REASON: Record<NonNullable<Issue['unignoredReason']>['reason'], string> = {
  events: 'it reached the events it was ignored for',
  users: 'it reached the users it was ignored for',
  time: 'its ignore time passed',
  escalating: 'it escalated',
};

/** "Ignored until …", "Came back …", "Escalating since …" (nothing when none applies). */
export function IgnoreStatus({ issue: i }: { issue: Issue }) {
  const u = i.ignoreUntil;
  return (
    <>
      {i.status === 'ignored' && u && (
        <p class="note" role="status">
          Ignored until{' '}
          {u.condition === 'time' && u.at ? (
            <Time iso={u.at} />
          ) : u.condition === 'escalating' ? (
            'it escalates'
          ) : (
            `${(u.count ?? 0).toLocaleString()} more ${u.condition} (${(u.seen ?? 0).toLocaleString()} so far)`
          )}
          .
        </p>
      )}
      {i.unignoredReason && (
        <p class="note" role="status">
          Back from ignored <Time iso={i.unignoredReason.at} />: {REASON[i.unignoredReason.reason]}.
        </p>
      )}
      {i.escalatingSince && (
        <p class="note" role="status">
          Escalating since <Time iso={i.escalatingSince} />: its last hour is well above its usual rate.
        </p>
      )}
    </>
  );
}
