import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { Loaded, NewestOlder, PageHead, Table, Time, useResource } from '../ui.tsx';
import type { Feedback as FeedbackItem, FeedbackPage } from '../../../schemas/api/feedback.ts';

/**
 * User feedback (issue 40): what people sent through Sentry's feedback widget, captureFeedback or a user report, newest
 * first, each with the issue of the error it is about when that error was stored (the listFeedback route).
 */
export function Feedback() {
  const { params } = useRoute();
  const slug = params.slug!;
  const [cursor, setCursor] = useState<string | null>(null);
  const r = useResource(() => call('listFeedback', { params: { slug }, query: { cursor: cursor ?? undefined, limit: 25 } }), [slug, cursor]);
  return (
    <div>
      <PageHead title="User feedback" />
      <p class="muted">
        Sent with Sentry's feedback widget, <code>Sentry.captureFeedback</code> or a user report; scrubbed like error events and kept 90 days.
      </p>
      <Loaded r={r} what="feedback">
        {(page) => <FeedbackTable slug={slug} page={page} showIssue empty="No feedback yet." />}
      </Loaded>
      <NewestOlder cursor={cursor} page={r.data} onCursor={setCursor} label="Feedback pages" />
    </div>
  );
}

/** A page of feedback as a table: who, what, where from, when, and (on the project page) which issue. */
export function FeedbackTable({ slug, page, showIssue, empty }: { slug: string; page: FeedbackPage; showIssue: boolean; empty: string }) {
  if (!page.data.length) return <p class="muted">{empty}</p>;
  return (
    <Table caption="User feedback, newest first" columns={['From', 'Message', 'Page', ...(showIssue ? ['Issue'] : []), 'Received']} class="feedback-table">
      {page.data.map((f) => (
        <tr key={f.id}>
          <td>
            <Reporter f={f} />
          </td>
          <td class="feedback-message">{f.message}</td>
          <td class="muted">{f.url ?? ''}</td>
          {showIssue && (
            <td>{f.groupId ? <a href={projectPath(slug, `/errors/${encodeURIComponent(f.groupId)}`)}>Open issue</a> : <span class="muted">none</span>}</td>
          )}
          <td>
            <Time iso={f.receivedAt} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

function Reporter({ f }: { f: FeedbackItem }) {
  if (!f.name && !f.email) return <span class="muted">anonymous</span>;
  return (
    <>
      {f.name && <div>{f.name}</div>}
      {f.email && <div class="muted">{f.email}</div>}
    </>
  );
}
