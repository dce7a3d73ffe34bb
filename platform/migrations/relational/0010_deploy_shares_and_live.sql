-- A deploy's shareable log link (§4.2, §5.2 rule 8): shown to credentialed readers, so kept readable (as
-- webhook secrets are); revoked by clearing it, and it expires.
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS share_token text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS share_expires_at timestamptz;
CREATE UNIQUE INDEX IF NOT EXISTS deploys_share_token ON deploys (share_token) WHERE share_token IS NOT NULL;

-- The production deploy a project's production hosts serve: the newest ready production deploy, or the one a
-- rollback chose.
ALTER TABLE projects ADD COLUMN IF NOT EXISTS live_deploy_id text;
