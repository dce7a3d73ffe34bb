-- Previews that only the team sees (issue 42): a project's per-deploy hosts (dep-...) can be protected by a password
-- (scrypt hash; the version bumps on each change, so old cookies stop working) and by share links. Off for existing
-- projects (this default); a new project is created with it on (api/projects/projects-repository.ts).
-- preview_key: the project's random key that signs the hosts' cookies (hosting/serve/preview-gate.ts).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS preview_protection boolean NOT NULL DEFAULT false;
ALTER TABLE projects ADD COLUMN IF NOT EXISTS preview_password_hash text;
ALTER TABLE projects ADD COLUMN IF NOT EXISTS preview_password_version integer NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN IF NOT EXISTS preview_key text;

CREATE TABLE IF NOT EXISTS preview_links (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  created_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS preview_links_project_idx ON preview_links (project_id, created_at DESC);
