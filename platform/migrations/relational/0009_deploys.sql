-- Deploys (spec §1, §2.4, §3.3, §4.4): a project's build source, its deploy hooks, and the deploys
-- themselves with their state, lease and output. Migration 0002 created `deploys` with what environment
-- stamping needs (§7.4); this adds the rest.

-- Where a project's code comes from and how it builds. One row per project that has a source.
CREATE TABLE IF NOT EXISTS project_build_settings (
  project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  repo_url text NOT NULL,
  build_command text NOT NULL DEFAULT '',
  output_dir text NOT NULL DEFAULT '.',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Build environment variables. A secret's value is write-only through the API (shown as a hint) and
-- masked in every stored log line.
CREATE TABLE IF NOT EXISTS project_build_env (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  value text NOT NULL,
  secret boolean NOT NULL DEFAULT false,
  PRIMARY KEY (project_id, name)
);

-- Deploy hooks (§2.4): only the token's SHA-256 is stored.
CREATE TABLE IF NOT EXISTS deploy_hooks (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  branch text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  hint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS deploy_hooks_project ON deploy_hooks (project_id);

-- status: queued -> building -> ready | failed | canceled (builder/deploy-builder.ts).
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS trigger_kind text NOT NULL DEFAULT 'api';
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS trigger_id text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS started_at timestamptz;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS failure_reason text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS exit_code integer;
-- A building deploy is leased to one builder, which renews lease_until while it builds; an expired lease
-- means the builder died (builder_lost).
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS lease_owner text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS lease_until timestamptz;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS artifact_dir text;
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS log_lines integer NOT NULL DEFAULT 0;

-- §3.3 across processes: at most one production deploy of a project queued or building. A second insert
-- fails on this index, and the caller answers 409 production_deploy_busy with the active one's id.
CREATE UNIQUE INDEX IF NOT EXISTS deploys_one_active_production ON deploys (project_id)
  WHERE environment = 'production' AND status IN ('queued', 'building');
-- A preview branch has at most one queued deploy: a second call returns it instead of queueing another.
CREATE UNIQUE INDEX IF NOT EXISTS deploys_one_queued_preview ON deploys (project_id, branch)
  WHERE environment = 'preview' AND status = 'queued';
CREATE INDEX IF NOT EXISTS deploys_project_created ON deploys (project_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS deploys_building_lease ON deploys (lease_until) WHERE status = 'building';
