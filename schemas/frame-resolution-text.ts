import type { UnresolvedReason } from './symbolicated-frame.ts';

/**
 * Why a stack frame kept its minified form, in words, for people (the console's issue page) and models (MCP's
 * get_issue): one table, so both say the same. No zod here: the console's bundle imports it.
 */
export const UNRESOLVED_REASON_TEXT: Record<UnresolvedReason, string> = {
  no_map: 'no source map for this file',
  line_out_of_range: 'line out of range of its map',
  map_refused: 'map could not be read',
  not_a_url: 'not a served file',
  busy: 'not resolved: processor busy',
};
