-- Every batch rewrites the samples ring (~9 KB of jsonb, stored out of line) of every group it touches,
-- and pglz compressing it was the largest single cost of the group upsert. lz4 compresses it several
-- times faster (group upsert 62.6 -> 43.3 us per event, bench/README.md). Only a server built with
-- lz4 has it (Debian's and the official images are; PGlite is not): elsewhere this is a no-op.
DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN ALTER TABLE error_groups ALTER COLUMN samples SET COMPRESSION lz4, ALTER COLUMN stack SET COMPRESSION lz4; END IF; END $$;
