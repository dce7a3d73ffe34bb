-- The ring of recent samples moves out of the group row. In the row, every batch that touched a group
-- rewrote its whole ring (~9 KB of jsonb, compressed and stored out of line), the largest single cost of
-- the processor's Postgres work (bench/README.md). Now each batch writes only its own samples of the
-- group (newest first, at most 20) into one slot, slot = the group's batch counter mod 20, and leaves
-- the other slots alone. The 20 most recent samples are always among the last 20 slots written (each
-- holds at least one), and error_groups_with_samples reads them back, newest first.
CREATE TABLE IF NOT EXISTS error_group_samples (
  group_id text NOT NULL REFERENCES error_groups(id) ON DELETE CASCADE,
  slot smallint NOT NULL,
  -- The group's batch counter when this slot was written: orders the slots, newest first.
  seq bigint NOT NULL,
  samples jsonb NOT NULL,
  PRIMARY KEY (group_id, slot)
) WITH (fillfactor = 70);
ALTER TABLE error_groups ADD COLUMN IF NOT EXISTS sample_batches bigint NOT NULL DEFAULT 0;
-- Rings written before this migration become slot 0 of their group.
INSERT INTO error_group_samples (group_id, slot, seq, samples) SELECT id, 0, 0, samples FROM error_groups WHERE samples <> '[]'::jsonb ON CONFLICT DO NOTHING;
UPDATE error_groups SET sample_batches = 1 WHERE samples <> '[]'::jsonb;
ALTER TABLE error_groups DROP COLUMN IF EXISTS samples;
CREATE OR REPLACE VIEW error_groups_with_samples AS
  SELECT g.*, (SELECT COALESCE(jsonb_agg(r.sample ORDER BY r.seq DESC, r.ord), '[]'::jsonb)
                 FROM (SELECT e.sample, s.seq, e.ord
                         FROM error_group_samples s, jsonb_array_elements(s.samples) WITH ORDINALITY AS e(sample, ord)
                        WHERE s.group_id = g.id
                        ORDER BY s.seq DESC, e.ord
                        LIMIT 20) r) AS samples
    FROM error_groups g;
-- lz4 compresses several times faster than pglz. Only a server built with lz4 has it (Debian's and the
-- official images are; PGlite is not): elsewhere this is a no-op.
DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN ALTER TABLE error_group_samples ALTER COLUMN samples SET COMPRESSION lz4; ALTER TABLE error_groups ALTER COLUMN stack SET COMPRESSION lz4; END IF; END $$;
