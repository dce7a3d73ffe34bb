-- Feature flags (issue 16): a project's flags, each one definition (schemas/flags.ts, validated by the API) under
-- its key. The edge loads them all into memory and evaluates there.
CREATE TABLE IF NOT EXISTS feature_flags (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key text NOT NULL,
  definition jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, key)
);
