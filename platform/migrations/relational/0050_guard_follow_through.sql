-- Guarded rollout's follow-through (builder/guarded-rollout/guard-sweep.ts, step 4). A degraded verdict is recorded
-- first: that is the claim, so one builder of many acts. The rollback, the build log's line and deploy.degraded follow
-- it. guard_acting_until is set with the claim (a minute on) and cleared once all of that is done; a verdict whose
-- builder failed or died midway is taken over by a later sweep once it has passed, and finished. Verdicts taken before
-- this migration count as finished (NULL).
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS guard_acting_until timestamptz;
CREATE INDEX IF NOT EXISTS deploys_guard_unfinished ON deploys (guard_acting_until) WHERE guard_acting_until IS NOT NULL;
