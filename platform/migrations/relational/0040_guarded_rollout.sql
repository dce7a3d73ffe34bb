-- Guarded rollout (issue 41): for a window after a production deploy goes live (its finished_at: a ready production
-- deploy goes live as it finishes), the builder's sweep (builder/guarded-rollout/) compares its new issues, error
-- events and crash-free sessions with the previous live deploy's same span and records a verdict here:
--   guard_status   NULL (never watched: previews, failed deploys, deploys older than the feature) | 'watching' |
--                  'healthy' | 'degraded' | 'rolled_back' | 'superseded' (no longer live before its window ended)
--   guard_evidence the numbers the verdict was taken on, and why (jsonb, schemas/guarded-rollout.ts GuardEvidence)
--   guard_decided_at when the verdict other than 'watching' was taken
--   live_at        when the deploy went live (finished_at for a ready production deploy; kept for a rollback's sake)
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS guard_status text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS guard_evidence jsonb;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS guard_decided_at timestamptz;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS live_at timestamptz;
ALTER TABLE deploys DROP CONSTRAINT IF EXISTS deploys_guard_status_check;
ALTER TABLE deploys ADD CONSTRAINT deploys_guard_status_check
  CHECK (guard_status IS NULL OR guard_status IN ('watching', 'healthy', 'degraded', 'rolled_back', 'superseded'));
-- The sweep's candidates: production deploys still being watched, or just finished and never looked at.
CREATE INDEX IF NOT EXISTS deploys_guard_watch ON deploys (finished_at) WHERE environment = 'production' AND status = 'ready' AND (guard_status IS NULL OR guard_status = 'watching');
-- A project's guarded rollout setting as set (schemas/guarded-rollout.ts fills in the defaults on read).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS guarded_rollout jsonb NOT NULL DEFAULT '{}'::jsonb;
