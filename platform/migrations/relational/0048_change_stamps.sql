-- Change stamps (issue 44 "light at rest"): a number that moves with every committed change to what a reader caches,
-- so the reader asks for the number, not for everything, while nothing changes.
-- Row `edge`: what the edge's caches load whole (ingest/project-cache.ts, ingest/flag-cache.ts): live ingest keys with
-- their project and error settings (edgeRepository.ingestKeys), the hosts the platform serves for each project
-- (sitesRepository.platformHosts), flag definitions and the ready deploys of flagged projects. Every table they read
-- bumps it, and only on the columns they read: not api_keys.last_used_at (key-usage.ts writes it every minute while
-- keys are used), nor deploys' lease, log and guard columns (written while a deploy builds). Tables the processor
-- writes per batch (error_monthly_usage, analytics_monthly_usage) have no trigger: the edge reads them every tick, and a
-- stamp row there would serialise every batch of every processor on one row lock.
--
-- The triggers are row-level and deferred to commit (constraint triggers), not statement-level:
-- * a statement trigger fires even when its statement touched no row, and the builder's queue claim, the sweeps and
--   retention deletes run every few seconds touching none: the stamp would move on every tick;
-- * at commit the bump is the transaction's last lock, held for the commit alone: a bump at the first statement would
--   hold the one row across the whole transaction, and two transactions that meet on another row in the other order
--   would deadlock;
-- * WHEN skips an UPDATE that names a column without changing it (a settings form saved as it was);
-- * the function bumps a row once per transaction however many rows changed (a transaction-local setting remembers).
-- TRUNCATE has statement triggers only; it bumps at once.
-- platform/migrate.ts splits statements on a `;` that ends a line: the function's body keeps its `;` inside lines.
CREATE TABLE IF NOT EXISTS change_stamps (
  name text PRIMARY KEY,
  stamp bigint NOT NULL
);
INSERT INTO change_stamps (name, stamp) VALUES ('edge', 0) ON CONFLICT (name) DO NOTHING;

-- bump_change_stamp('<name>'): the trigger's argument names the row (migration 0049 uses it for 'uptime').
CREATE OR REPLACE FUNCTION bump_change_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE bumped text := 'change_stamps.' || TG_ARGV[0] || '_bumped'; BEGIN
  IF current_setting(bumped, true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config(bumped, 'on', true); UPDATE change_stamps SET stamp = stamp + 1 WHERE name = TG_ARGV[0]; END IF; RETURN NULL; END
$$;

DROP TRIGGER IF EXISTS edge_stamp_rows ON api_keys;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON api_keys DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON api_keys;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF id, project_id, kind, token_hash, revoked_at, created_at ON api_keys
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.id, OLD.project_id, OLD.kind, OLD.token_hash, OLD.revoked_at, OLD.created_at)
    IS DISTINCT FROM (NEW.id, NEW.project_id, NEW.kind, NEW.token_hash, NEW.revoked_at, NEW.created_at))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON api_keys;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');

DROP TRIGGER IF EXISTS edge_stamp_rows ON projects;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON projects DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON projects;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF id, number, slug, production_domains, preview_domains, live_deploy_id ON projects
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.id, OLD.number, OLD.slug, OLD.production_domains, OLD.preview_domains, OLD.live_deploy_id)
    IS DISTINCT FROM (NEW.id, NEW.number, NEW.slug, NEW.production_domains, NEW.preview_domains, NEW.live_deploy_id))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON projects;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON projects FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');

DROP TRIGGER IF EXISTS edge_stamp_rows ON error_settings;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON error_settings DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON error_settings;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF project_id, paused, ingest_origins ON error_settings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.project_id, OLD.paused, OLD.ingest_origins) IS DISTINCT FROM (NEW.project_id, NEW.paused, NEW.ingest_origins))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON error_settings;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON error_settings FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');

DROP TRIGGER IF EXISTS edge_stamp_rows ON project_domains;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON project_domains DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON project_domains;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF project_id, domain, verified_at ON project_domains
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.project_id, OLD.domain, OLD.verified_at) IS DISTINCT FROM (NEW.project_id, NEW.domain, NEW.verified_at))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON project_domains;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON project_domains FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');

DROP TRIGGER IF EXISTS edge_stamp_rows ON deploys;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON deploys DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON deploys;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF id, project_id, git_sha, environment, status, created_at, artifact_dir ON deploys
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.id, OLD.project_id, OLD.git_sha, OLD.environment, OLD.status, OLD.created_at, OLD.artifact_dir)
    IS DISTINCT FROM (NEW.id, NEW.project_id, NEW.git_sha, NEW.environment, NEW.status, NEW.created_at, NEW.artifact_dir))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON deploys;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON deploys FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');

DROP TRIGGER IF EXISTS edge_stamp_rows ON feature_flags;
CREATE CONSTRAINT TRIGGER edge_stamp_rows AFTER INSERT OR DELETE ON feature_flags DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_update ON feature_flags;
CREATE CONSTRAINT TRIGGER edge_stamp_update AFTER UPDATE OF project_id, key, definition ON feature_flags
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN ((OLD.project_id, OLD.key, OLD.definition) IS DISTINCT FROM (NEW.project_id, NEW.key, NEW.definition))
  EXECUTE FUNCTION bump_change_stamp('edge');
DROP TRIGGER IF EXISTS edge_stamp_truncate ON feature_flags;
CREATE TRIGGER edge_stamp_truncate AFTER TRUNCATE ON feature_flags FOR EACH STATEMENT EXECUTE FUNCTION bump_change_stamp('edge');
