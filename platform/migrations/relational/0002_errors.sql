-- Error tracking (spec §2.6-2.8, §3.1, §7): settings, deploys used for environment stamping,
-- groups (issues), per-month usage for caps, and the ledger of consumed events (exactly-once counting).
CREATE TABLE IF NOT EXISTS error_settings (
  project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  paused boolean NOT NULL DEFAULT false,
  ingest_origins text[] NOT NULL DEFAULT '{}',
  alerts_enabled boolean NOT NULL DEFAULT true,
  last_test_alert_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- The project's alert recipients (the same list uptime alerts use, §7.6).
CREATE TABLE IF NOT EXISTS project_alert_recipients (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, email)
);

-- Deploys: what environment stamping needs (§7.4); the deploy-hook work extends it.
CREATE TABLE IF NOT EXISTS deploys (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  branch text NOT NULL,
  git_sha text,
  environment text NOT NULL CHECK (environment IN ('production', 'preview')),
  status text NOT NULL DEFAULT 'queued',
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS deploys_project_sha ON deploys (project_id, git_sha);

-- One issue per (project, fingerprint); it spans environments, counted per environment in env_counts.
CREATE TABLE IF NOT EXISTS error_groups (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  fingerprint text NOT NULL,
  name text NOT NULL,
  message text NOT NULL,
  stack text NOT NULL DEFAULT '',
  -- The first in-app frame, e.g. "at loadUser (src/users.ts:12:5)".
  culprit text,
  status text NOT NULL DEFAULT 'unresolved' CHECK (status IN ('unresolved', 'resolved', 'ignored')),
  count bigint NOT NULL DEFAULT 0,
  env_counts jsonb NOT NULL DEFAULT '{}',
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  regression_count integer NOT NULL DEFAULT 0,
  suggestion text,
  -- Ring of the 20 most recent samples (newest first).
  samples jsonb NOT NULL DEFAULT '[]',
  last_alert_at timestamptz,
  UNIQUE (project_id, fingerprint)
);
CREATE INDEX IF NOT EXISTS error_groups_list ON error_groups (project_id, status, count DESC);

-- Occurrences accepted per project, environment and calendar month (UTC), and drops by reason (§7.5).
CREATE TABLE IF NOT EXISTS error_monthly_usage (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  month text NOT NULL,
  environment text NOT NULL,
  accepted bigint NOT NULL DEFAULT 0,
  dropped jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (project_id, month, environment)
);

-- Every consumed event id, written in the same transaction as the counters it changed: a re-delivered
-- batch finds its ids here and changes nothing.
-- The outcome is kept so a re-delivery can rebuild the ClickHouse rows of events accepted earlier
-- (a crash between the Postgres commit and the ClickHouse insert heals on re-delivery).
CREATE TABLE IF NOT EXISTS error_events_consumed (
  event_id text PRIMARY KEY,
  project_id text NOT NULL,
  -- 'pending' only inside the claiming transaction; committed rows are accepted or dropped.
  outcome text NOT NULL DEFAULT 'pending' CHECK (outcome IN ('pending', 'accepted', 'dropped')),
  drop_reason text,
  group_id text,
  environment text,
  consumed_at timestamptz NOT NULL DEFAULT now()
);
