/**
 * What the item mappers beside this file share: reading a field of a hostile JSON value as the type the bus wants,
 * cut to its bound, or undefined. Pure.
 */
export const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** A non-empty string cut to `max` characters. */
export const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v !== '' ? v.slice(0, max) : undefined);

/** A string, or a number written as one (Sentry's `did` may be either), cut to `max`. */
export const textOrNumber = (v: unknown, max: number): string | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? String(v).slice(0, max) : text(v, max);

/** A whole count within [0, max]: negatives and non-numbers are 0, past max is max. */
export const count = (v: unknown, max = 1_000_000): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), max) : 0);

/** A finite number of at least 0 (a duration in seconds), else undefined. */
export const seconds = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/** A whole number within [min, max], else undefined (a field out of range is left out, not cut). */
export const intIn = (v: unknown, min: number, max: number): number | undefined =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : undefined;

/**
 * A time as epoch ms: Sentry writes ISO 8601 strings (sessions) or epoch seconds as a number (events' timestamp);
 * anything else, or a time that is no date, is undefined.
 */
export function epochMs(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) && v > 0 ? Math.round(v * 1000) : undefined;
  if (typeof v !== 'string' || v.length > 64) return undefined;
  const ms = Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Release and environment as the SDK said them (attrs of a session, fields of an event or a check-in). */
export function releaseAndEnvironment(o: Record<string, unknown> | undefined): { release?: string; environment?: string } {
  const out: { release?: string; environment?: string } = {};
  const release = text(o?.release, 250);
  const environment = text(o?.environment, 64);
  if (release) out.release = release;
  if (environment) out.environment = environment;
  return out;
}
