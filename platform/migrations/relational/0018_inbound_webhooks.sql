-- Inbound provider webhooks (issue 25, spec §4.2): every delivery a provider makes is remembered by its own id for at
-- least as long as the provider redelivers (GitHub and Stripe: 3 days; kept 7), so a replay changes nothing. The row
-- is written when the route accepts the delivery; `processed_at` when the processor has acted on it (at least once,
-- counted once).
CREATE TABLE IF NOT EXISTS inbound_deliveries (
  provider text NOT NULL,
  delivery_id text NOT NULL,
  event text NOT NULL,
  received_at timestamptz NOT NULL,
  processed_at timestamptz,
  outcome text,
  PRIMARY KEY (provider, delivery_id)
);
CREATE INDEX IF NOT EXISTS inbound_deliveries_received ON inbound_deliveries (received_at);

-- A GitHub repository connected to a project (/v1/integrations/github): its pushes queue deploys there. One repository
-- may feed several projects; a project connects a repository once.
CREATE TABLE IF NOT EXISTS github_connections (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  repo_full_name text NOT NULL,
  clone_url text NOT NULL,
  created_by text,
  created_at timestamptz NOT NULL,
  UNIQUE (project_id, repo_full_name)
);
CREATE INDEX IF NOT EXISTS github_connections_repo ON github_connections (lower(repo_full_name));
