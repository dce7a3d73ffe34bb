-- Ignore until, and escalation (issue 41). An ignored issue may carry one condition that brings it back to
-- `unresolved`: N more events (ignore_count over ignore_count_base, the count when it was ignored), N more distinct
-- users (ignore_user_count; the users seen since, hashed, in error_group_ignore_users: at most N rows per issue), a time
-- (ignore_until_at, checked by the triage sweep every minute) or escalation (ignore_until_escalating). None of them: ignored
-- forever, as before. When it comes back, unignored_reason ('events', 'users', 'time', 'escalating') and unignored_at say
-- why and when, until the next transition. escalating_since: set by the sweep while the issue's last hour is above its
-- baseline (processor/errors/issue-triage-sweep.ts), cleared once it calms down; escalated_at: its last escalation (an
-- issue escalates again only after it calmed down and at most once per 24 hours).
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignore_count bigint;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignore_count_base bigint;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignore_user_count integer;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignore_until_at timestamptz;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignore_until_escalating boolean NOT NULL DEFAULT false;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS ignored_at timestamptz;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS unignored_reason text;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS unignored_at timestamptz;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS escalating_since timestamptz;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS escalated_at timestamptz;
ALTER TABLE error_groups DROP CONSTRAINT IF EXISTS error_groups_unignored_reason_check;
ALTER TABLE error_groups ADD CONSTRAINT error_groups_unignored_reason_check CHECK (unignored_reason IN ('events', 'users', 'time', 'escalating'));
-- The sweep's two reads; neither column changes in a batch's update, so the batch path keeps its HOT updates (0004).
CREATE INDEX IF NOT EXISTS error_groups_ignore_until_at ON error_groups (ignore_until_at) WHERE ignore_until_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS error_groups_escalating ON error_groups (escalating_since) WHERE escalating_since IS NOT NULL;
-- The distinct users an issue ignored until N users has seen since it was ignored: a hash of the user's id, else email,
-- else IP address (never the value itself); emptied when the issue comes back or is ignored again.
CREATE TABLE IF NOT EXISTS error_group_ignore_users (
  group_id text NOT NULL REFERENCES error_groups (id) ON DELETE CASCADE,
  user_key text NOT NULL,
  PRIMARY KEY (group_id, user_key)
);
