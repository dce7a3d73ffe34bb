-- Heartbeat (cron) monitors beside URL monitors (issue 40): Sentry's `check_in` items and HTTP cron form create and
-- drive them. A heartbeat is a row of uptime_monitors of kind 'heartbeat', named by its slug within the project, with
-- its schedule (crontab or interval, in a time zone), check-in margin and maximum runtime. `expected_at` is when the
-- next check-in is due and `next_check_at` that plus the margin: the uptime monitor claims a heartbeat whose
-- next_check_at has passed as missed, as it claims a URL monitor's due check. Incidents, rollups and alerts are the
-- URL monitors' own; `recoveries_to_up` consecutive successes end an incident (URL monitors: 1).
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'url';
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS slug text;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS schedule jsonb;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS timezone text;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS checkin_margin_min integer;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS max_runtime_min integer;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS recoveries_to_up integer NOT NULL DEFAULT 1;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS consecutive_successes integer NOT NULL DEFAULT 0;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS expected_at timestamptz;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS last_check_in_at timestamptz;
ALTER TABLE uptime_monitors ADD COLUMN IF NOT EXISTS last_check_in_status text;
-- One heartbeat per slug in a project (the upsert's key).
CREATE UNIQUE INDEX IF NOT EXISTS uptime_monitors_heartbeat_slug ON uptime_monitors (project_id, slug) WHERE kind = 'heartbeat';

-- A heartbeat's check-ins, the newest LIMITS.uptime.heartbeat.checkInsKept per monitor. One row per SDK check-in id:
-- `in_progress` until its closing `ok`/`error` (or `timeout` when `timeout_at` passes first); `missed` rows are the
-- monitor's own. The key makes a re-delivered check-in a duplicate.
CREATE TABLE IF NOT EXISTS uptime_check_ins (
  monitor_id text NOT NULL REFERENCES uptime_monitors(id) ON DELETE CASCADE,
  check_in_id text NOT NULL,
  project_id text NOT NULL,
  status text NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  duration_ms integer,
  timeout_at timestamptz,
  environment text,
  release text,
  PRIMARY KEY (monitor_id, check_in_id)
);
CREATE INDEX IF NOT EXISTS uptime_check_ins_latest ON uptime_check_ins (monitor_id, started_at DESC);
CREATE INDEX IF NOT EXISTS uptime_check_ins_running ON uptime_check_ins (timeout_at) WHERE status = 'in_progress';

-- Incidents whose alert has not gone out yet: a heartbeat's incidents open in the check-in pipeline and the uptime
-- monitor sends their alerts from here.
CREATE INDEX IF NOT EXISTS uptime_incidents_unalerted ON uptime_incidents (started_at)
  WHERE down_mail_at IS NULL OR (ended_at IS NOT NULL AND up_mail_at IS NULL);
