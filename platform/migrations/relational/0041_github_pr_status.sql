-- GitHub commit statuses and pull-request comments (issue 41, processor/github-status/): a deploy queued by a push or a
-- pull request of a repository bound through the GitHub App remembers what GitHub needs to hear about it, and what it
-- was told. The row is the outbox: the processor's sweep takes rows whose next_attempt_at has come (leased, so
-- processors sweeping at once never tell GitHub twice), compares the deploy with what GitHub was last told, and sends
-- only the difference. At least once: a crash before `reported_*` is written sends the same status again (harmless), and
-- the comment is found again by its marker rather than posted twice.
--   repo_id, installation_id  the binding the push came through (GitHub's ids, never the name)
--   head_sha                  the commit the status is set on
--   pr_number                 from a pull_request delivery, or found for a push (GET commits/:sha/pulls, once)
--   reported_state/_description  the commit status last set (pending | success | failure | error)
--   comment_id, comment_hash  the pull request's comment and the hash of the body it was last given
--   next_attempt_at           when the sweep looks next; NULL: nothing more to tell (finished and past its watch window)
CREATE TABLE IF NOT EXISTS github_deploy_links (
  deploy_id text PRIMARY KEY REFERENCES deploys(id) ON DELETE CASCADE,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  repo_id bigint NOT NULL,
  installation_id bigint NOT NULL,
  head_sha text NOT NULL,
  pr_number integer,
  pr_looked_up boolean NOT NULL DEFAULT false,
  reported_state text,
  reported_description text,
  status_id bigint,
  comment_id bigint,
  comment_hash text,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  next_attempt_at timestamptz,
  lease_until timestamptz,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS github_deploy_links_due ON github_deploy_links (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS github_deploy_links_commit ON github_deploy_links (repo_id, head_sha);
CREATE INDEX IF NOT EXISTS github_deploy_links_pr ON github_deploy_links (project_id, repo_id, pr_number, created_at) WHERE pr_number IS NOT NULL;
-- The project's GitHub settings as set ({ "failOnNewErrors": boolean }, default false: schemas/github-status.ts).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS github_settings jsonb NOT NULL DEFAULT '{}'::jsonb;
