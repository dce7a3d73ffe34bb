/**
 * Debug ids (issue 37): the uuid a bundler (or `sentry-cli sourcemaps inject`) writes into a built file and its source
 * map alike, so an event's frame finds its map with no release and no path.
 */
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

/** A debug id in its canonical form (lower case, dashed), or undefined when `value` is none. */
export function normalizeDebugId(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  // sentry-cli writes the bare uuid; some bundlers append a `-<age>` suffix (`...-0`, as in PDB debug ids): dropped.
  const bare = v.length > 36 && /^[0-9a-f-]{36}-\d+$/.test(v) ? v.slice(0, 36) : v;
  if (!UUID.test(bare)) return undefined;
  const hex = bare.replace(/-/g, '');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
