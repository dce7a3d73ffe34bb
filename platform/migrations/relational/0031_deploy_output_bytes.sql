-- Disk quotas (issue 38): a deploy's output is charged to its project and account at its apparent size (a sparse file
-- counts as its length), measured while the builder copies it. Set while the deploy finishes (the charge holds its
-- room) and kept while its output is; outputs kept from before this column are measured by the builders' sweep.
ALTER TABLE deploys ADD COLUMN IF NOT EXISTS artifact_bytes bigint;
