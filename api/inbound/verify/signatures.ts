import { createHmac, timingSafeEqual } from 'node:crypto';
import type { InboundRefusal } from '../../../schemas/inbound.ts';
import { parseBoundedJson } from '../../../platform/bounded-json.ts';

/** What a provider's verifier makes of a delivery: who it is, or why it is refused (401 invalid_signature). */
export type Verification =
  | { ok: true; deliveryId: string; event: string; payload: Record<string, unknown> }
  | { ok: false; reason: InboundRefusal; message: string };

export type Headers = Record<string, string | string[] | undefined>;

export const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};

export const refuse = (reason: InboundRefusal, message: string): Verification => ({ ok: false, reason, message });

/** Does any of `given` equal the HMAC-SHA256 of `content` under any of `keys`? Constant time per comparison. */
export function hmacMatches(keys: Array<string | Buffer>, content: Buffer, given: Buffer[]): boolean {
  let match = false;
  for (const key of keys) {
    const expected = createHmac('sha256', key).update(content).digest();
    for (const g of given) if (g.length === expected.length && timingSafeEqual(g, expected)) match = true;
  }
  return match;
}

/** The body as a JSON object, or undefined: also for JSON nested deeper than LIMITS.json.maxDepth (checked before the parse). */
export function jsonObject(text: string): Record<string, unknown> | undefined {
  const parsed = parseBoundedJson(text);
  if (!parsed.ok) return undefined;
  const v = parsed.value;
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
