-- User feedback (issue 40): Sentry's `feedback` items (the widget, captureFeedback) and legacy `user_report`, scrubbed
-- and stamped by processor/feedback/. One row per feedback id and project: a re-delivered item changes nothing.
-- `event_id` is the error event it is about, as the SDK named it; `group_id` its issue once known (at write time, or
-- by the later pass that links feedback whose event arrived after it, processor/feedback/feedback-retention.ts).
-- Kept FEEDBACK_RETENTION (90 days) by received_at, pruned in batches like the error ledger.
CREATE TABLE IF NOT EXISTS feedback (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  id text NOT NULL,
  source text NOT NULL CHECK (source IN ('feedback', 'user_report')),
  event_id text,
  group_id text,
  environment text NOT NULL,
  name text,
  email text,
  message text NOT NULL,
  url text,
  release text,
  client_time timestamptz,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, id)
);
CREATE INDEX IF NOT EXISTS feedback_project_list ON feedback (project_id, received_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS feedback_issue_list ON feedback (project_id, group_id, received_at DESC, id DESC) WHERE group_id IS NOT NULL;
-- Feedback whose event is not stored (yet): what the linking pass and the read-time link look at.
CREATE INDEX IF NOT EXISTS feedback_unlinked ON feedback (project_id, event_id) WHERE group_id IS NULL AND event_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS feedback_received_at ON feedback USING brin (received_at);

-- The SDK's own id of an error event (Sentry's `event_id`), beside the id the edge gave it: feedback names its event by
-- the SDK's id. Kept for the ledger's window (7 days); within it the feedback pass copies the issue onto the feedback.
ALTER TABLE error_events_consumed ADD COLUMN IF NOT EXISTS client_event_id text;
CREATE INDEX IF NOT EXISTS error_events_consumed_client_event ON error_events_consumed (project_id, client_event_id) WHERE client_event_id IS NOT NULL;
