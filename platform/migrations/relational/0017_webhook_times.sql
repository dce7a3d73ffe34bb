-- One time type (issue 24): the webhook tables kept their times as epoch milliseconds (bigint) while every other
-- table uses timestamptz. The twelve columns become timestamptz, keeping every value (milliseconds survive: timestamptz
-- holds microseconds). The code passes Date objects from the platform clock, so tests still move them with a manual
-- clock and every process compares the same instants.
ALTER TABLE webhook_endpoints
  ALTER COLUMN previous_secret_until TYPE timestamptz USING to_timestamp(previous_secret_until / 1000.0),
  ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at / 1000.0),
  ALTER COLUMN updated_at TYPE timestamptz USING to_timestamp(updated_at / 1000.0);
ALTER TABLE inboxes
  ALTER COLUMN webhook_previous_secret_until TYPE timestamptz USING to_timestamp(webhook_previous_secret_until / 1000.0),
  ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at / 1000.0);
ALTER TABLE webhook_deliveries
  ALTER COLUMN next_attempt_at TYPE timestamptz USING to_timestamp(next_attempt_at / 1000.0),
  ALTER COLUMN lease_until TYPE timestamptz USING to_timestamp(lease_until / 1000.0),
  ALTER COLUMN created_at TYPE timestamptz USING to_timestamp(created_at / 1000.0),
  ALTER COLUMN updated_at TYPE timestamptz USING to_timestamp(updated_at / 1000.0);
ALTER TABLE webhook_attempts
  ALTER COLUMN started_at TYPE timestamptz USING to_timestamp(started_at / 1000.0),
  ALTER COLUMN finished_at TYPE timestamptz USING to_timestamp(finished_at / 1000.0),
  ALTER COLUMN next_attempt_at TYPE timestamptz USING to_timestamp(next_attempt_at / 1000.0);
