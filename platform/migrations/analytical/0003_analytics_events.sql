-- One row per accepted analytics event (issue 16). Keyed by the event's uuid within its project and time:
-- ReplacingMergeTree collapses a re-inserted event (re-delivery after a crash, a client sending a uuid twice in
-- one second's batch), insert dedup tokens make a retried block a no-op, and readers use FINAL for exact counts.
-- Properties are a Map of strings (JSON text of each value) that queries filter on: properties['plan'] = '"pro"'.
-- Ordered for the queries: one project's events by name over time. Retention: a TTL set at start
-- (ANALYTICS_RETENTION_DAYS).
CREATE TABLE IF NOT EXISTS analytics_events (
  project_id String,
  event_id String,
  event String,
  distinct_id String,
  timestamp DateTime64(3, 'UTC'),
  received_at DateTime64(3, 'UTC'),
  environment LowCardinality(String),
  session_id String,
  path String,
  origin_host String,
  properties Map(String, String)
) ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (project_id, event, timestamp, event_id)
SETTINGS non_replicated_deduplication_window = 1000;
