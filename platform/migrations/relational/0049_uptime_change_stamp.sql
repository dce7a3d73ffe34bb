-- Change stamp `uptime` (issue 44 "light at rest"; the table and its style are migration 0048's): at rest the uptime
-- monitor (processor/uptime/uptime-monitor.ts) knows when the next URL check is due and claims nothing before then,
-- reading this stamp once a second instead; it moves whenever a URL monitor's next check can have moved EARLIER than
-- the monitor knows:
-- * a URL monitor inserted, not paused (the API's create, the live site's monitor), or
-- * an UPDATE after which the monitor is claimable (kind 'url', not paused) and that resumed it, changed its kind or
--   moved next_check_at earlier (the API's "check now" on resume and on a new URL).
-- Not: the claim (monitorsRepository.claimDue only moves next_check_at later), a check's record, pausing, a delete, and
-- nothing of heartbeat monitors (kind 'heartbeat': never claimed, they check in). A later next check costs the monitor
-- one claim that finds nothing at the time it knew, after which it reads the schedule again.
-- Deferred to commit, row-level, once per transaction, through 0048's bump_change_stamp (see there why).
INSERT INTO change_stamps (name, stamp) VALUES ('uptime', 0) ON CONFLICT (name) DO NOTHING;

DROP TRIGGER IF EXISTS uptime_stamp_insert ON uptime_monitors;
CREATE CONSTRAINT TRIGGER uptime_stamp_insert AFTER INSERT ON uptime_monitors DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.kind = 'url' AND NOT NEW.paused)
  EXECUTE FUNCTION bump_change_stamp('uptime');
DROP TRIGGER IF EXISTS uptime_stamp_update ON uptime_monitors;
CREATE CONSTRAINT TRIGGER uptime_stamp_update AFTER UPDATE OF kind, paused, next_check_at ON uptime_monitors
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (NEW.kind = 'url' AND NOT NEW.paused AND (OLD.paused OR OLD.kind IS DISTINCT FROM NEW.kind OR NEW.next_check_at < OLD.next_check_at))
  EXECUTE FUNCTION bump_change_stamp('uptime');
