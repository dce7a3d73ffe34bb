-- GitHub repositories bound by proof (issue 38): a connection names the repository by GitHub's id and the GitHub App
-- installation it was proven through, never by its name (a name can be typed by anyone, and re-created by anyone once
-- its repository is deleted or renamed). Rows made before have neither and match no push: "needs reconnecting".
ALTER TABLE github_connections ADD COLUMN IF NOT EXISTS repo_id bigint;
ALTER TABLE github_connections ADD COLUMN IF NOT EXISTS installation_id bigint;
ALTER TABLE github_connections DROP CONSTRAINT IF EXISTS github_connections_project_id_repo_full_name_key;
CREATE UNIQUE INDEX IF NOT EXISTS github_connections_project_repo_id ON github_connections (project_id, repo_id);
CREATE INDEX IF NOT EXISTS github_connections_installation ON github_connections (installation_id, repo_id);
-- A connection under way: the user who started it, for which project and repository, until the user comes back from
-- GitHub's authorize or install page with the code. Single use, ten minutes; the state is kept only as a hash.
CREATE TABLE IF NOT EXISTS github_connect_states (
  state_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  repository text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS github_connect_states_user ON github_connect_states (user_id, created_at);
-- Pushes acted on, by what they push (repository id, ref, head commit) whatever their delivery id: GitHub signs the
-- body, not X-GitHub-Delivery, so a replayed body under a new delivery id is the same push. The first delivery of a
-- push owns it (a redelivery of that same delivery acts again, harmlessly).
CREATE TABLE IF NOT EXISTS code_host_pushes (
  repo_id bigint NOT NULL,
  ref text NOT NULL,
  head_sha text NOT NULL,
  delivery_id text NOT NULL,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (repo_id, ref, head_sha)
);
CREATE INDEX IF NOT EXISTS code_host_pushes_by_age ON code_host_pushes (received_at);
