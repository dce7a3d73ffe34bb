import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A secret token: 256 random bits (base64url) behind its prefix. Shown once; store only tokenHash(). */
export function newToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** SHA-256 hex of a token: what the database keeps. Tokens are high-entropy, so no salt or KDF is needed. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** A resource id with a type prefix (`prj_`, `whk_`, `dlv_`, ...): 128 random bits. */
export function newId(prefix: string): string {
  return prefix + randomBytes(16).toString('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
