-- Every uptime check (issue 26): when, how it went and why it failed; the console lists a monitor's latest. Kept 30
-- days (the status page reads the hourly rollups in the relational store, not these).
CREATE TABLE IF NOT EXISTS uptime_checks (
  project_id String,
  monitor_id String,
  at DateTime64(3, 'UTC'),
  ok UInt8,
  status Nullable(UInt16),
  ms UInt32,
  error LowCardinality(String),
  detail String
) ENGINE = MergeTree
PARTITION BY toYYYYMMDD(at)
ORDER BY (project_id, monitor_id, at)
TTL toDateTime(at) + INTERVAL 30 DAY;
