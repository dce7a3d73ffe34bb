import { createHmac } from 'node:crypto';

/**
 * Signing of outbound deliveries (spec §6.3), the same scheme Stripe uses:
 * `Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`, where each v1 is the lowercase hex
 * HMAC-SHA256 of `<t>.<raw body>` keyed with the whole secret string (including `whsec_`).
 * During a rotation both the new and the previous secret sign (new first); a receiver accepts
 * when any v1 verifies (sdk/node/webhook-verifier.ts).
 */
export const SIGNATURE_HEADER = 'Service-Signature';

export function signPayload(secret: string, t: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex');
}

export function signatureHeader(secrets: readonly string[], t: number, rawBody: string): string {
  return [`t=${t}`, ...secrets.map((s) => `v1=${signPayload(s, t, rawBody)}`)].join(',');
}

/** The secrets that sign a delivery now: the new one first, and the previous one while its 24 h overlap lasts. */
export function signingSecrets(current: string, previous: string | null, previousUntil: unknown, now: number): string[] {
  // A time read back (a Date from timestamptz) or a clock reading.
  const until = previousUntil instanceof Date ? previousUntil.getTime() : Number(previousUntil);
  return previous && previousUntil != null && until > now ? [current, previous] : [current];
}
