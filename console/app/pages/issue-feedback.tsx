import { useState } from 'preact/hooks';
import { call } from '../api.ts';
import { Loaded, NewestOlder, useResource } from '../ui.tsx';
import { FeedbackTable } from './feedback.tsx';

/** The issue page's user feedback (issue 40): feedback about this issue's events, newest first (listIssueFeedback). */
export function IssueFeedback({ slug, issueId }: { slug: string; issueId: string }) {
  const [cursor, setCursor] = useState<string | null>(null);
  const r = useResource(
    () => call('listIssueFeedback', { params: { slug, groupId: issueId }, query: { cursor: cursor ?? undefined, limit: 10 } }),
    [slug, issueId, cursor],
  );
  return (
    <section aria-labelledby="feedback-h">
      <h2 id="feedback-h">User feedback</h2>
      <Loaded r={r} what="the feedback">
        {(page) => <FeedbackTable slug={slug} page={page} showIssue={false} empty="No one has sent feedback about this issue." />}
      </Loaded>
      <NewestOlder cursor={cursor} page={r.data} onCursor={setCursor} label="Feedback pages" />
    </section>
  );
}
