import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * §5.2 rule 7: a deploy hook call may carry `X-Hub-Signature-256: sha256=<hex>` (GitHub's header) or
 * `X-Service-Signature` (ours, same format; a bare hex digest is accepted too), the HMAC-SHA256 of the raw
 * body keyed with the hook token. Without either header the token alone authorizes.
 */
export type SignatureCheck = 'absent' | 'valid' | 'invalid';

export function checkHookSignature(rawBody: Buffer, token: string, headers: Record<string, string | string[] | undefined>): SignatureCheck {
  const header = first(headers['x-hub-signature-256']) ?? first(headers['x-service-signature']);
  if (header === undefined) return 'absent';
  const hex = header.trim().replace(/^sha256=/i, '');
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return 'invalid';
  const expected = createHmac('sha256', token).update(rawBody).digest();
  const given = Buffer.from(hex, 'hex');
  // Constant time: the comparison does not tell how many leading bytes matched.
  return timingSafeEqual(expected, given) ? 'valid' : 'invalid';
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
