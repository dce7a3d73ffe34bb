-- Issues know their deploys (issue 41): the deploy an issue was first seen in, the last deploy it was seen in and the
-- deploy it last regressed in (processor/errors/steps/environment-step.ts names an event's deploy; NULL when none could
-- be named). "Resolve in next deploy": status 'resolving' with resolve_deploy_id, the project's live deploy when it was
-- marked. It reads as resolved once a production deploy created after that one is live; an event regresses it only
-- when its deploy was created after that one (processor/errors/repositories/groups-repository.ts).
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS first_deploy_id text;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS last_deploy_id text;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS regressed_deploy_id text;
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS resolve_deploy_id text;
-- A deploy's issues: introduced in it, regressed in it.
CREATE INDEX IF NOT EXISTS error_groups_first_deploy ON error_groups (first_deploy_id) WHERE first_deploy_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS error_groups_regressed_deploy ON error_groups (regressed_deploy_id) WHERE regressed_deploy_id IS NOT NULL;
ALTER TABLE error_groups DROP CONSTRAINT IF EXISTS error_groups_status_check;
ALTER TABLE error_groups ADD CONSTRAINT error_groups_status_check CHECK (status IN ('unresolved', 'resolved', 'ignored', 'resolving'));
