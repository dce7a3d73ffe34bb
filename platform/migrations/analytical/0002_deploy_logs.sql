-- Build log lines (issue 14): every stdout/stderr line of a build, in order, with its time, written while
-- the build runs. Secrets are masked before insertion. Keyed by (deploy, seq): a line written twice (a retried
-- insert) collapses.
CREATE TABLE IF NOT EXISTS deploy_logs (
  project_id String,
  deploy_id String,
  seq UInt32,
  at DateTime64(3, 'UTC'),
  stream LowCardinality(String),
  line String
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (project_id, deploy_id, seq);
