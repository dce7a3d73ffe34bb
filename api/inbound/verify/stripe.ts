import { LIMITS } from '../../../schemas/limits.ts';
import { header, hmacMatches, jsonObject, refuse, type Headers, type Verification } from './signatures.ts';

/**
 * Stripe's scheme, as the `stripe` package verifies it: `Stripe-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`,
 * each v1 the HMAC-SHA256 of `<t>.<raw body>` keyed with the endpoint's `whsec_` secret (several v1 while Stripe rolls
 * a secret); `t` within the tolerance of now. The event's `id` is the dedupe key, its `type` the event.
 */
export function verifyStripe(headers: Headers, raw: Buffer, secrets: string[], nowSec: number): Verification {
  const signature = header(headers, 'stripe-signature');
  if (!signature) return refuse('missing_signature', 'Stripe-Signature is required');
  const parts = signature.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  const v1 = parts.filter(([k, v]) => k === 'v1' && v && /^[0-9a-fA-F]{64}$/.test(v)).map(([, v]) => Buffer.from(v!, 'hex'));
  if (!t || !/^\d+$/.test(t) || !v1.length) return refuse('missing_signature', 'Stripe-Signature carries no timestamp or no v1 signature');
  if (!hmacMatches(secrets, Buffer.concat([Buffer.from(`${t}.`), raw]), v1))
    return refuse('bad_signature', 'no v1 signature of Stripe-Signature matches the body');
  if (Math.abs(nowSec - Number(t)) > LIMITS.inbound.timestampToleranceSec)
    return refuse('expired_timestamp', 'the signed timestamp is outside the 5-minute tolerance');
  const payload = jsonObject(raw.toString('utf8'));
  if (!payload || typeof payload.id !== 'string' || typeof payload.type !== 'string')
    return refuse('malformed_body', 'the body is not a Stripe event (id and type)');
  return { ok: true, deliveryId: payload.id, event: payload.type, payload };
}
