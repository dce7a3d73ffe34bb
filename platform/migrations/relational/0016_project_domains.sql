-- Custom domains (issue 22): a project's site answers on a domain only once the project proved control of it with a
-- DNS TXT record (_service-challenge.<domain> holding `token`). Several projects may have a pending claim; one
-- verified owner per domain.
CREATE TABLE IF NOT EXISTS project_domains (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  domain text NOT NULL,
  token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  verified_at timestamptz,
  PRIMARY KEY (project_id, domain)
);
CREATE UNIQUE INDEX IF NOT EXISTS project_domains_verified_owner ON project_domains (domain) WHERE verified_at IS NOT NULL;
