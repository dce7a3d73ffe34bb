import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { assertNotCrossSite, userIdOf } from '../auth/auth-plugin.ts';
import { dummyPasswordHash, verifyPassword } from '../auth/passwords.ts';
import { rememberDevice, signInGate } from './sign-in-limits.ts';
import { createSession, findUserForSignIn, getUser, normalizeEmail, revokeSession } from './users-repository.ts';
import { errorAnswers, NoContent } from '../../schemas/api/common.ts';
import { MeAnswer, SignedInAnswer, SignInBody } from '../../schemas/api/accounts.ts';

/**
 * Console accounts: sign-in (sets the session cookie), sign-out (ends the session server-side),
 * and the current user. There is no public sign-up: the first start creates the owner
 * (service/bootstrap.ts); an open sign-up on a self-hosted instance would let anyone in.
 */

export function sessionCookieOptions(platform: Pick<Platform, 'config'>) {
  return {
    httpOnly: true,
    sameSite: 'lax' as const,
    path: '/',
    secure: platform.config.PUBLIC_BASE_URL?.startsWith('https:') ?? false,
  };
}

export function setSessionCookie(platform: Platform, reply: FastifyReply, token: string, expiresAt: Date): void {
  reply.setCookie(SESSION_COOKIE, token, { ...sessionCookieOptions(platform), expires: expiresAt, maxAge: Math.floor(LIMITS.sessionTtlMs / 1000) });
}

export function accountsRoutes(platform: Platform): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.post(
      '/v1/auth/sign-in',
      {
        config: { auth: AUTH.public },
        schema: {
          tags: ['auth'],
          summary: 'Sign in with email and password; sets the cx_session cookie',
          description: `Rate limited per 15 minutes (429 rate_limited with Retry-After): ${LIMITS.signIn.perEmailAndIpPer15Min} attempts per email and IP and ${LIMITS.signIn.perIpPer15Min} per IP; a browser that signed in to the account before (the \`cx_device\` cookie) counts only against itself (${LIMITS.signIn.perDevicePer15Min}), so guesses from a shared IP cannot lock its owner out.`,
          body: SignInBody,
          response: { 200: SignedInAnswer, ...errorAnswers(401, 429) },
        },
      },
      async (request, reply) => {
        // Login CSRF: a foreign page must not sign a browser into an account of its choosing.
        assertNotCrossSite(request, platform);
        const email = normalizeEmail(request.body.email);
        const user = await findUserForSignIn(db, email);
        const gate = await signInGate(platform, request, email, user?.id);
        if (!gate.allowed) throw new ServiceError('rate_limited', 'too many sign-in attempts; try again later', { retryAfterSec: gate.retryAfterSec });
        const ok = await verifyPassword(request.body.password, user?.passwordHash ?? (await dummyPasswordHash()));
        if (!user || !ok) throw new ServiceError('invalid_credentials', 'email or password is wrong');
        await rememberDevice(platform, request, reply, user.id, sessionCookieOptions(platform).secure);
        const session = await createSession(db, user.id, clock.now());
        setSessionCookie(platform, reply, session.token, session.expiresAt);
        const { passwordHash: _omit, ...publicUser } = user;
        return { user: publicUser };
      },
    );

    app.post(
      '/v1/auth/sign-out',
      {
        config: { auth: AUTH.sessionOnly },
        schema: { tags: ['auth'], summary: 'End the current console session (server-side)', response: { 204: NoContent } },
      },
      async (request, reply) => {
        const cred = request.credential;
        if (cred?.kind === 'session') await revokeSession(db, cred.sessionId, clock.now());
        reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(platform));
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/auth/me',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['auth'], summary: 'The signed-in user', response: { 200: MeAnswer } },
      },
      async (request) => {
        const user = await getUser(db, userIdOf(request));
        if (!user) throw new ServiceError('unauthorized', 'the account no longer exists');
        return { user, credential: { kind: request.credential!.kind as 'session' | 'cli' } };
      },
    );
  };
}
