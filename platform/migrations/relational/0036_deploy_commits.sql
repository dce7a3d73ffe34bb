-- Suspect commits (issue 41): the commits a deploy brought since the project's previous production deploy, read by
-- the builder from its checkout (builder/commits/read-commits.ts), bounded: at most 50 per deploy, 100 files each,
-- subjects cut to 200 characters, the author's name only (no e-mail). Newest first by position.
CREATE TABLE IF NOT EXISTS deploy_commits (
  deploy_id text NOT NULL REFERENCES deploys(id) ON DELETE CASCADE,
  position smallint NOT NULL,
  sha text NOT NULL,
  author text NOT NULL,
  committed_at timestamptz NOT NULL,
  subject text NOT NULL,
  files jsonb NOT NULL DEFAULT '[]'::jsonb,
  files_cut boolean NOT NULL DEFAULT false,
  PRIMARY KEY (deploy_id, position)
);
