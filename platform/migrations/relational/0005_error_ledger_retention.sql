-- The consumed-events ledger is pruned by age (processor/errors/ledger-retention.ts). Rows arrive in
-- consumed_at order, so a BRIN index finds the old ones at almost no cost to the inserts.
CREATE INDEX IF NOT EXISTS error_events_consumed_consumed_at ON error_events_consumed USING brin (consumed_at);
