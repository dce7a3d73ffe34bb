-- Merged issues (issue 41): Sentry's merge. The target keeps its row and fingerprint; each merged issue's row goes
-- (its counts, environments and first/last seen folded into the target, its kept samples dropped) and leaves a
-- redirect here: later events of its fingerprint land in the target (processor/errors/error-pipeline.ts rewrites a
-- batch's group ids through this table), GET of its id answers the target, and the target lists what it merged.
-- Occurrences already in ClickHouse keep their old group id: the issue's reads include its merged ids. A merge of an
-- issue that was itself a merge target moves its redirects to the new target: no chains, one lookup.
CREATE TABLE IF NOT EXISTS error_group_merges (
  group_id text PRIMARY KEY,
  project_id text NOT NULL,
  fingerprint text NOT NULL,
  merged_into text NOT NULL REFERENCES error_groups (id) ON DELETE CASCADE,
  merged_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS error_group_merges_into ON error_group_merges (merged_into);
-- Resolve in next deploy, completed (issue 41): the production deploy whose going live resolved a `resolving` issue
-- (domain/issue-events/resolve-on-deploy.ts). Set with status 'resolved'; resolve_deploy_id keeps the mark, so events
-- of the marked deploy or older ones still do not reopen it. Cleared by every transition and by a regression.
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS resolved_deploy_id text;
