-- The context people triage an error by (issue 40), per occurrence, scrubbed before insertion like the rest:
-- `level` (fatal, error, warning, info, debug, log; '' when the event named none); `release` as the SDK named it;
-- `tags` the issue's facets and the tag filter read: the event's own tags (schemas/error-context.ts bounds them) with
-- the derived ones (browser, os, device, release, environment, url, level, runtime) over them
-- (processor/errors/facet-tags.ts); `breadcrumbs` and `context` (contexts, request, user, sdk, dist, server name, the
-- client's environment name) as JSON, '' when the event had none.
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS level LowCardinality(String) DEFAULT '';
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS release String DEFAULT '';
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS tags Map(String, String);
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS breadcrumbs String DEFAULT '';
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS context String DEFAULT '';
