-- Uptime monitors (issue 26, spec §4.1 uptime, §4.2 GET /v1/status/:slug).
-- A monitor is claimed for a check by advancing next_check_at in one UPDATE (FOR UPDATE SKIP LOCKED): any number of
-- monitor processes check each monitor once per interval. State and the consecutive failures live on the row; each
-- down/up change is an incident; hourly rollups make the status page's uptime without reading raw checks.
CREATE TABLE IF NOT EXISTS uptime_monitors (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  url text NOT NULL,
  method text NOT NULL DEFAULT 'GET',
  interval_sec integer NOT NULL,
  timeout_ms integer NOT NULL,
  expected_min integer NOT NULL DEFAULT 200,
  expected_max integer NOT NULL DEFAULT 399,
  body_contains text,
  failures_to_down integer NOT NULL DEFAULT 2,
  public boolean NOT NULL DEFAULT false,
  show_url boolean NOT NULL DEFAULT false,
  paused boolean NOT NULL DEFAULT false,
  site boolean NOT NULL DEFAULT false,
  state text NOT NULL DEFAULT 'pending',
  consecutive_failures integer NOT NULL DEFAULT 0,
  next_check_at timestamptz NOT NULL,
  last_check_at timestamptz,
  last_ok boolean,
  last_status integer,
  last_ms integer,
  last_error text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS uptime_monitors_project ON uptime_monitors (project_id, created_at);
CREATE INDEX IF NOT EXISTS uptime_monitors_due ON uptime_monitors (next_check_at) WHERE NOT paused;
-- One site monitor per project.
CREATE UNIQUE INDEX IF NOT EXISTS uptime_monitors_site ON uptime_monitors (project_id) WHERE site;

CREATE TABLE IF NOT EXISTS uptime_incidents (
  id text PRIMARY KEY,
  monitor_id text NOT NULL REFERENCES uptime_monitors(id) ON DELETE CASCADE,
  project_id text NOT NULL,
  started_at timestamptz NOT NULL,
  ended_at timestamptz,
  cause_error text NOT NULL,
  cause_status integer,
  cause_detail text,
  down_mail_at timestamptz,
  up_mail_at timestamptz
);
CREATE INDEX IF NOT EXISTS uptime_incidents_monitor ON uptime_incidents (monitor_id, started_at DESC);
CREATE INDEX IF NOT EXISTS uptime_incidents_project ON uptime_incidents (project_id, started_at DESC);
-- At most one open incident per monitor.
CREATE UNIQUE INDEX IF NOT EXISTS uptime_incidents_open ON uptime_incidents (monitor_id) WHERE ended_at IS NULL;

CREATE TABLE IF NOT EXISTS uptime_hourly (
  monitor_id text NOT NULL REFERENCES uptime_monitors(id) ON DELETE CASCADE,
  hour timestamptz NOT NULL,
  checks integer NOT NULL DEFAULT 0,
  failures integer NOT NULL DEFAULT 0,
  PRIMARY KEY (monitor_id, hour)
);

-- The project's choice: its live site gets a monitor when the first production deploy goes live (default on).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS uptime_site_monitor boolean NOT NULL DEFAULT true;
