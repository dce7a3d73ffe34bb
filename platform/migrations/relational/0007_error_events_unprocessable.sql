-- Error events the pipeline could not store however often it tried (processor/errors/poison-isolation.ts),
-- set aside so their partition goes on, and kept here, scrubbed, for an operator to look at and replay
-- (`npm run unprocessable -- list|replay`). message is the one-event bus message (envelope v1) to replay.
CREATE TABLE IF NOT EXISTS error_events_unprocessable (
  event_id text PRIMARY KEY,
  project_id text NOT NULL,
  message bytea NOT NULL,
  error text NOT NULL,
  attempts integer NOT NULL DEFAULT 1,
  set_aside_at timestamptz NOT NULL DEFAULT now()
);
