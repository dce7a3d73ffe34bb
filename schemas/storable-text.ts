import { LIMITS } from './limits.ts';

/**
 * Text Postgres can store. JSON can carry NUL and lone UTF-16 surrogates (as \u0000 and \ud800..\udfff
 * escapes); Postgres text and jsonb cannot, so the pipeline makes such text storable and the API refuses it.
 */

/** A JSON escape that may decode to text Postgres cannot store: NUL, or a surrogate (paired or not). */
export const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * `value` with text Postgres can store: every NUL and every lone UTF-16 surrogate in its strings and keys
 * replaced by U+FFFD (surrogate pairs, such as emoji, stay).
 */
export function storableText(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    const s = value.isWellFormed() ? value : value.toWellFormed();
    return s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
  }
  // Values come from JSON bounded at parse (platform/bounded-json.ts); the walk is bounded on its own too.
  if (depth > LIMITS.json.maxDepth && value && typeof value === 'object') return null;
  if (Array.isArray(value)) return value.map((v) => storableText(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, storableText(k) as string, storableText(v, depth + 1));
    return out;
  }
  return value;
}

/** `o[key] = value` as an own property, also for the key `__proto__` (which JSON.parse makes an own key). */
export function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}
