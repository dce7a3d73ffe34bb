-- A deploy's artifact directory is stored relative to DATA_DIR (`artifacts/<deployId>`), no longer as the absolute
-- path the builder wrote it to: a data directory moved or restored at another path (a backup restored on a new
-- machine, the upgrade test's fixture) kept its files but its sites answered "nothing is deployed here". Every path
-- the builder wrote ends in /artifacts/<deployId>; any other value (none is written) is left as it is.
UPDATE deploys SET artifact_dir = 'artifacts/' || id
 WHERE artifact_dir IS NOT NULL AND right(artifact_dir, length(id) + 11) = '/artifacts/' || id;
