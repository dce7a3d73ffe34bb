import { header, hmacMatches, jsonObject, refuse, type Headers, type Verification } from './signatures.ts';

/**
 * GitHub's webhook scheme: `X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body keyed with the
 * webhook's secret; `X-GitHub-Delivery` names the delivery (the dedupe key), `X-GitHub-Event` the event. The body is
 * JSON, or `application/x-www-form-urlencoded` with the JSON in `payload` (a webhook's content type setting).
 */
export function verifyGithub(headers: Headers, raw: Buffer, secrets: string[]): Verification {
  const signature = header(headers, 'x-hub-signature-256');
  if (!signature) return refuse('missing_signature', 'X-Hub-Signature-256 is required');
  const hex = signature.trim().replace(/^sha256=/i, '');
  if (!/^[0-9a-fA-F]{64}$/.test(hex) || !hmacMatches(secrets, raw, [Buffer.from(hex, 'hex')])) {
    return refuse('bad_signature', 'X-Hub-Signature-256 does not match the body (HMAC-SHA256 keyed with the webhook secret)');
  }
  const deliveryId = header(headers, 'x-github-delivery');
  const event = header(headers, 'x-github-event');
  if (!deliveryId || !event) return refuse('malformed_body', 'X-GitHub-Delivery and X-GitHub-Event are required');
  const type = (header(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const text = raw.toString('utf8');
  const payload = type === 'application/x-www-form-urlencoded' ? jsonObject(new URLSearchParams(text).get('payload') ?? '') : jsonObject(text);
  if (!payload) return refuse('malformed_body', 'the body is not a JSON object (or a form whose payload field is one)');
  return { ok: true, deliveryId, event, payload };
}
