-- Incidents and maintenance people write (issue 43), shown on the project's status page (api/status/):
-- * status_incidents: a manual incident (title, impact, affected monitors) or the annotation of an automatic one
--   (automatic_incident_id: an uptime_incidents row of the project; at most one annotation each). Its status is the
--   latest update's; resolved_at is set by the update that resolves it.
-- * status_incident_updates: what was said and when (investigating → identified → monitoring → resolved).
-- * status_maintenance: a planned window. In progress = starts_at <= now < ends_at and not cancelled; then the
--   covered monitors' failures open no incident and send no alert (processor/uptime/). started_event_at /
--   ended_event_at mark that uptime.maintenance.started / .completed went out (the uptime monitor's maintenance sweep).
CREATE TABLE IF NOT EXISTS status_incidents (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  title text NOT NULL,
  impact text NOT NULL DEFAULT 'minor',
  status text NOT NULL DEFAULT 'investigating',
  monitor_ids text[] NOT NULL DEFAULT '{}',
  automatic_incident_id text REFERENCES uptime_incidents(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz
);
CREATE INDEX IF NOT EXISTS status_incidents_project_idx ON status_incidents (project_id, created_at DESC);
CREATE UNIQUE INDEX IF NOT EXISTS status_incidents_automatic_idx ON status_incidents (automatic_incident_id) WHERE automatic_incident_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS status_incident_updates (
  id text PRIMARY KEY,
  incident_id text NOT NULL REFERENCES status_incidents(id) ON DELETE CASCADE,
  status text NOT NULL,
  message text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS status_incident_updates_incident_idx ON status_incident_updates (incident_id, created_at);

CREATE TABLE IF NOT EXISTS status_maintenance (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  title text NOT NULL,
  message text NOT NULL DEFAULT '',
  monitor_ids text[] NOT NULL DEFAULT '{}',
  starts_at timestamptz NOT NULL,
  ends_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  cancelled_at timestamptz,
  started_event_at timestamptz,
  ended_event_at timestamptz
);
CREATE INDEX IF NOT EXISTS status_maintenance_project_idx ON status_maintenance (project_id, starts_at DESC);
-- The sweep's two questions: which windows started / ended without their event (few rows, partial indexes).
CREATE INDEX IF NOT EXISTS status_maintenance_unstarted_idx ON status_maintenance (starts_at) WHERE started_event_at IS NULL AND cancelled_at IS NULL;
CREATE INDEX IF NOT EXISTS status_maintenance_unended_idx ON status_maintenance (ends_at) WHERE ended_event_at IS NULL AND cancelled_at IS NULL;
