-- Symbolication (issue 37): an occurrence's `stack` is the original one when a source map resolved it; the stack as
-- the client sent it is kept beside it, and each frame's resolution (original and minified position, context lines,
-- which map resolved it or why none did) as JSON. '' for events with nothing to resolve.
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS minified_stack String DEFAULT '';
ALTER TABLE error_occurrences ADD COLUMN IF NOT EXISTS frames String DEFAULT '';
