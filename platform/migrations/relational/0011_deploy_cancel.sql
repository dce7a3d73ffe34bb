-- A cancel asked of a building deploy: its builder sees it at the next lease renewal, kills the build and
-- ends the deploy `canceled` (builder/deploy-builder.ts). A queued deploy is canceled at once.
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false;
