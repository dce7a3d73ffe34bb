import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * §5.2 rule 7: a deploy hook call may carry `X-Hub-Signature-256: sha256=<hex>` (GitHub's header) or
 * `X-Service-Signature` (ours, same format; a bare hex digest is accepted too), the HMAC-SHA256 of the raw
 * body keyed with the hook token. Without either header the token alone authorizes; with both, both must match
 * (a caller cannot pair a forged header with one it replayed).
 */
export type SignatureCheck = 'absent' | 'valid' | 'invalid';

export function checkHookSignature(rawBody: Buffer, token: string, headers: Record<string, string | string[] | undefined>): SignatureCheck {
  const given = [headers['x-hub-signature-256'], headers['x-service-signature']].flatMap((h) => (h === undefined ? [] : Array.isArray(h) ? h : [h]));
  if (!given.length) return 'absent';
  const expected = createHmac('sha256', token).update(rawBody).digest();
  let valid = true;
  for (const header of given) {
    const hex = header.trim().replace(/^sha256=/i, '');
    // Constant time: the comparison does not tell how many leading bytes matched.
    if (!/^[0-9a-fA-F]{64}$/.test(hex) || !timingSafeEqual(expected, Buffer.from(hex, 'hex'))) valid = false;
  }
  return valid ? 'valid' : 'invalid';
}
