-- Release health (issue 40): one row per Sentry session update (`session` item) or session aggregate (`sessions`
-- item) a client sent, stamped with its environment (§7.4) and the deploy it names (processor/release-health/).
-- `kind` is 'update' or 'aggregate'. An update row holds 0/1 flags (started on the init update; crashed, abnormal,
-- exited by its status; errored when errors > 0 or status errored) and is counted once per session id when read; an
-- aggregate row holds its counts (started = exited + errored + abnormal + crashed + unhandled, each session in one
-- of them). `unhandled`: an unhandled error that did not end the session (@sentry/browser 10+; older SDKs said crashed).
-- `bucket` is the minute the session started (UTC). Keyed by (batch id, item index): a row written again (a
-- re-delivery after a crash) collapses, insert dedup tokens make a retried block a no-op, and readers use FINAL.
-- Kept 90 days, as Sentry keeps release health.
CREATE TABLE IF NOT EXISTS release_sessions (
  project_id String,
  environment LowCardinality(String),
  deploy_id String,
  release String,
  batch_id String,
  item UInt32,
  kind LowCardinality(String),
  session_id String,
  distinct_id String,
  started UInt32,
  crashed UInt32,
  unhandled UInt32,
  errored UInt32,
  abnormal UInt32,
  exited UInt32,
  bucket DateTime('UTC'),
  received_at DateTime64(3, 'UTC'),
  INDEX release_sessions_batch batch_id TYPE bloom_filter GRANULARITY 4
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (project_id, bucket, batch_id, item)
TTL bucket + INTERVAL 90 DAY
SETTINGS non_replicated_deduplication_window = 1000;
