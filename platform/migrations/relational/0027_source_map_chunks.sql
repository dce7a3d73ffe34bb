-- Chunks of a source map upload in flight (issue 37): sentry-cli (and `cx sourcemaps upload`) cut an artifact bundle
-- into chunks named by their SHA-1, POST the ones the server lacks, then ask it to assemble the bundle. Chunk uploads
-- name no project, so a chunk belongs to whoever sent it: the project of a `cx_live_` key, or the user of a `cx_cli_`
-- token (`owner_id` is a prj_ or usr_ id). One owner never sees, reuses or learns of another's chunks. They are
-- deleted once assembled, swept an hour after their last upload, and an owner's oldest go first past one upload's bytes.
CREATE TABLE IF NOT EXISTS source_map_chunks (
  owner_id text NOT NULL,
  checksum text NOT NULL,
  size integer NOT NULL,
  content bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (owner_id, checksum)
);
CREATE INDEX IF NOT EXISTS source_map_chunks_by_age ON source_map_chunks (created_at);
