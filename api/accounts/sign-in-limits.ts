import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../../platform/platform.ts';
import { newToken, tokenHash } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * Sign-in limits that a stranger cannot turn against the owner (issue 22, row 9), as GitHub and Auth0 do it:
 *   - a browser that signed in to the account before carries a device cookie (`cx_device`, a random token whose
 *     hash is kept in sign_in_devices): its attempts count only against that device, so guesses from the same
 *     shared IP (an office NAT, a VPN, loopback) do not lock it out;
 *   - any other attempt counts against the caller's IP (all accounts: a spray from one address) and against the
 *     account and IP together (guesses at one account from one address);
 *   - a correct password from a fresh IP is never refused because of another IP's guesses.
 * What a stranger with many addresses can still do is guess slowly from each; the password hash's cost is the
 * fence there.
 */
export const DEVICE_COOKIE = 'cx_device';
const WINDOW_MS = 15 * 60 * 1000;
const DEVICE_TTL_MS = 180 * 24 * 60 * 60 * 1000;

export interface SignInGate {
  allowed: boolean;
  retryAfterSec: number;
}

export async function signInGate(
  platform: Pick<Platform, 'db' | 'limiter'>,
  request: FastifyRequest,
  email: string,
  userId: string | undefined,
): Promise<SignInGate> {
  const device = await knownDevice(platform, request, userId);
  const hits = device
    ? [{ key: `sign-in:device:${device}`, limit: LIMITS.signIn.perDevicePer15Min, windowMs: WINDOW_MS }]
    : [
        { key: `sign-in:ip:${request.ip}`, limit: LIMITS.signIn.perIpPer15Min, windowMs: WINDOW_MS },
        { key: `sign-in:${email}:${request.ip}`, limit: LIMITS.signIn.perEmailAndIpPer15Min, windowMs: WINDOW_MS },
      ];
  const decisions = await platform.limiter.hitAll(hits);
  const refused = decisions.filter((d) => !d.allowed);
  return { allowed: refused.length === 0, retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)) };
}

/** The device cookie's hash, when it names a device this user signed in from. */
async function knownDevice(platform: Pick<Platform, 'db'>, request: FastifyRequest, userId: string | undefined): Promise<string | undefined> {
  const token = request.cookies?.[DEVICE_COOKIE];
  if (!token || !userId || token.length > 200) return undefined;
  const hash = tokenHash(token);
  const r = await platform.db.query('SELECT 1 FROM sign_in_devices WHERE token_hash = $1 AND user_id = $2', [hash, userId]);
  return r.rows.length ? hash : undefined;
}

/** After a correct password: remember this browser (a new device cookie, or the one it has refreshed). */
export async function rememberDevice(
  platform: Pick<Platform, 'db'>,
  request: FastifyRequest,
  reply: FastifyReply,
  userId: string,
  secure: boolean,
): Promise<void> {
  const existing = request.cookies?.[DEVICE_COOKIE];
  const token = existing && existing.length <= 200 && (await knownDevice(platform, request, userId)) ? existing : newToken('dev_');
  await platform.db.query(`INSERT INTO sign_in_devices (token_hash, user_id) VALUES ($1, $2) ON CONFLICT (token_hash) DO UPDATE SET last_used_at = now()`, [
    tokenHash(token),
    userId,
  ]);
  reply.setCookie(DEVICE_COOKIE, token, { httpOnly: true, sameSite: 'lax', path: '/v1/auth', secure, maxAge: Math.floor(DEVICE_TTL_MS / 1000) });
}
