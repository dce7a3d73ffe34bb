import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../../platform/platform.ts';
import { newToken, tokenHash } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';
import { usersRepository } from './users-repository.ts';

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
/** The cookie goes only where it is read: the sign-in route's folder (`/v1/auth`). */
const DEVICE_COOKIE_PATH = ROUTES.signIn.path.slice(0, ROUTES.signIn.path.lastIndexOf('/'));

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
  return (await usersRepository.isKnownDevice(platform.db, hash, userId)) ? hash : undefined;
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
  await usersRepository.rememberDevice(platform.db, tokenHash(token), userId);
  reply.setCookie(DEVICE_COOKIE, token, { httpOnly: true, sameSite: 'lax', path: DEVICE_COOKIE_PATH, secure, maxAge: Math.floor(DEVICE_TTL_MS / 1000) });
}
