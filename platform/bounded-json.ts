import { LIMITS } from '../schemas/limits.ts';

/**
 * JSON from strangers, parsed only when its nesting is bounded (LIMITS.json.maxDepth). The check is one pass over
 * the text that counts open brackets outside strings, so it cannot overflow the stack itself, and it runs before
 * JSON.parse: after it, every recursive walk of the value (JSON.stringify, zod, our own) has at most maxDepth
 * levels to descend.
 */
export type BoundedJson = { ok: true; value: unknown } | { ok: false; reason: 'too_deep' | 'invalid_json'; message: string };

const tooDeep = (maxDepth: number) => `JSON nested deeper than ${maxDepth} levels`;
export const JSON_TOO_DEEP_MESSAGE = tooDeep(LIMITS.json.maxDepth);

/** The first position at which `text` nests deeper than `maxDepth`, or -1. Malformed text is left to JSON.parse. */
export function jsonDepthExceededAt(text: string, maxDepth: number = LIMITS.json.maxDepth): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return -1;
}

export function parseBoundedJson(text: string, maxDepth: number = LIMITS.json.maxDepth): BoundedJson {
  if (jsonDepthExceededAt(text, maxDepth) !== -1) return { ok: false, reason: 'too_deep', message: tooDeep(maxDepth) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'invalid_json', message: 'not valid JSON' };
  }
}
