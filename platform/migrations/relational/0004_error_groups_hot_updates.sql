-- Every occurrence updates its group's count. With count in an index no update can be HOT (each
-- one inserts into every index); a project's open groups are capped (2,000 per environment), so
-- sorting them by count at read time is cheap. Free space on each page lets updates stay HOT.
DROP INDEX IF EXISTS error_groups_list;
CREATE INDEX IF NOT EXISTS error_groups_project_status ON error_groups (project_id, status);
ALTER TABLE error_groups SET (fillfactor = 80);
