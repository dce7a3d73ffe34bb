/** Reading a provider's JSON payload defensively, as a stranger's: a field of the wrong type reads as absent. */
export const obj = (v: unknown): Record<string, unknown> | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
/** A non-empty string, or undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);
/** A safe integer, or null. */
export const num = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);
