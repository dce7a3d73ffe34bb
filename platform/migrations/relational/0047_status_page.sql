-- Status pages people read (issue 43 "The page"):
-- * uptime_hourly gains the response times of each hour's successful checks (their sum and count), so the page's
--   24-hour response-time chart reads the rollups, never the raw checks. Hours rolled up before this migration have
--   none (ms_checks 0) and show no point.
-- * a verified custom domain can serve the project's status page instead of its site (`serves = 'status'`).
ALTER TABLE uptime_hourly ADD COLUMN IF NOT EXISTS ms_sum bigint NOT NULL DEFAULT 0;
ALTER TABLE uptime_hourly ADD COLUMN IF NOT EXISTS ms_checks integer NOT NULL DEFAULT 0;
ALTER TABLE project_domains ADD COLUMN IF NOT EXISTS serves text NOT NULL DEFAULT 'site';
