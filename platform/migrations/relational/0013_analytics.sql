-- Analytics (issue 16): the monthly event count a project's quota is held to, counted once per batch. The batch
-- ledger makes a re-delivered batch (after a processor crash) add nothing; rows older than 7 days are pruned.
CREATE TABLE IF NOT EXISTS analytics_monthly_usage (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  month text NOT NULL,
  accepted bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, month)
);

CREATE TABLE IF NOT EXISTS analytics_batches_consumed (
  batch_id text PRIMARY KEY,
  project_id text NOT NULL,
  consumed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS analytics_batches_consumed_at ON analytics_batches_consumed (consumed_at);
