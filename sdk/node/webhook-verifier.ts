import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Verifier for receivers of the service's webhooks (spec §6.3). Self-contained: copy this file
 * into a receiver, or import it. Usage:
 *
 *   import { verifyWebhook } from './webhook-verifier.ts';
 *   // rawBody: the exact bytes received (do not re-serialise parsed JSON)
 *   const event = verifyWebhook(rawBody, req.headers['service-signature'], process.env.WEBHOOK_SECRET);
 *   // throws WebhookVerificationError when the signature or timestamp is not acceptable
 *
 * The header is `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`; each v1 is HMAC-SHA256 of
 * `<t>.<raw body>` keyed with the whole secret (`whsec_...`). During a secret rotation the header
 * carries two v1 values; a match on any one is enough. A `t` more than five minutes away from now,
 * either way, is refused (replays of old deliveries). Digests are compared in constant time.
 * Deduplicate on the `Service-Webhook-Id` header: it stays the same across retries and replays.
 */

export const DEFAULT_TOLERANCE_SEC = 300;

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: 'missing_header' | 'malformed_header' | 'timestamp_out_of_tolerance' | 'no_matching_signature',
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface ParsedSignatureHeader {
  timestamp: number;
  signatures: string[];
}

/** Parse `t=...,v1=...,v1=...`; unknown schemes (v0, future ones) are ignored. */
export function parseSignatureHeader(header: string | string[] | undefined | null): ParsedSignatureHeader {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) throw new WebhookVerificationError('missing_header', 'no Service-Signature header');
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(val)) timestamp = Number(val);
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(val)) signatures.push(val.toLowerCase());
  }
  if (timestamp === undefined || !signatures.length)
    throw new WebhookVerificationError('malformed_header', 'Service-Signature needs t=<unix seconds> and at least one v1=<hex>');
  return { timestamp, signatures };
}

export interface VerifyOptions {
  /** Allowed distance between `t` and now, in seconds. Default 300. */
  toleranceSec?: number;
  /** Now in epoch milliseconds (tests). */
  now?: number;
}

/** Check the signature; throws WebhookVerificationError, returns nothing when it verifies. */
export function verifySignature(rawBody: string | Buffer, header: string | string[] | undefined | null, secret: string, opts: VerifyOptions = {}): void {
  const { timestamp, signatures } = parseSignatureHeader(header);
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  const tolerance = opts.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  if (Math.abs(now - timestamp) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `signature timestamp is more than ${tolerance} s from now`);
  }
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest();
  let match = false;
  // Compare against every v1 (no early exit), each in constant time.
  for (const sig of signatures) {
    const got = Buffer.from(sig, 'hex');
    if (got.length === expected.length && timingSafeEqual(got, expected)) match = true;
  }
  if (!match) throw new WebhookVerificationError('no_matching_signature', 'no v1 signature matches this secret and body');
}

export interface WebhookPayload<T = Record<string, unknown>> {
  event: string;
  data: T;
  sentAt: string;
}

/** Verify, then parse the body: `{ event, data, sentAt }`. */
export function verifyWebhook<T = Record<string, unknown>>(
  rawBody: string | Buffer,
  header: string | string[] | undefined | null,
  secret: string,
  opts: VerifyOptions = {},
): WebhookPayload<T> {
  verifySignature(rawBody, header, secret, opts);
  return JSON.parse(typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8')) as WebhookPayload<T>;
}
