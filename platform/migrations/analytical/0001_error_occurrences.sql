-- One row per accepted error event (spec §7). Keyed by event id: ReplacingMergeTree collapses a
-- re-inserted event (re-delivery after a crash), insert dedup tokens make a retried block a no-op,
-- and readers that need exact counts use FINAL. Everything here was scrubbed before insertion.
CREATE TABLE IF NOT EXISTS error_occurrences (
  project_id String,
  group_id String,
  event_id String,
  fingerprint String,
  environment LowCardinality(String),
  received_at DateTime64(3, 'UTC'),
  client_time Nullable(DateTime64(3, 'UTC')),
  name String,
  message String,
  stack String,
  culprit String,
  path String,
  runtime LowCardinality(String),
  user_id String,
  distinct_id String,
  session_id String,
  deploy_id String,
  git_sha String,
  origin_host String,
  extra String,
  truncated Array(String)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(received_at)
ORDER BY (project_id, group_id, event_id)
SETTINGS non_replicated_deduplication_window = 1000;
