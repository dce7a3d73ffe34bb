-- Build variables per environment (issue 42): a variable applies to production builds, preview builds or both, and
-- a preview one may be bound to one branch (an override that wins over the plain preview value for that branch's
-- previews). Each variable gets an id of its own (`env_...`): one key may now have several rows (its production
-- value, its preview value, a branch's). Variables set before apply to both environments, for every branch.
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS id text;
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS production boolean NOT NULL DEFAULT true;
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS preview boolean NOT NULL DEFAULT true;
-- '' for every branch; else the one branch whose preview builds it applies to (preview only).
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS branch text NOT NULL DEFAULT '';
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE project_build_env ADD COLUMN IF NOT EXISTS updated_at timestamptz NOT NULL DEFAULT now();
UPDATE project_build_env SET id = 'env_' || substr(md5(project_id || ':' || name), 1, 24) WHERE id IS NULL;
ALTER TABLE project_build_env ALTER COLUMN id SET NOT NULL;
ALTER TABLE project_build_env DROP CONSTRAINT IF EXISTS project_build_env_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS project_build_env_id ON project_build_env (id);
CREATE INDEX IF NOT EXISTS project_build_env_project ON project_build_env (project_id, name);

-- The ingest key builds get as CX_INGEST_KEY: an ingest key (`cak_live_`, write-only, public by design: it ships in
-- the site's bundle) made for the project on its first build, kept here in clear so every build gets the same one.
-- Revoking it in the key list makes the next build mint another.
CREATE TABLE IF NOT EXISTS project_build_ingest_key (
  project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  key_id text NOT NULL,
  token text NOT NULL
);

-- Which framework a deploy's build detected (builder/frameworks/detect-framework.ts), when its settings left the
-- build command or output directory unset; null otherwise.
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS framework text;
