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
import { normalizeEmail, usersRepository } from './users-repository.ts';
import { declared } from '../declared-route.ts';

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
    app.route({
      ...declared('signIn'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        // Login CSRF: a foreign page must not sign a browser into an account of its choosing.
        assertNotCrossSite(request, platform);
        const email = normalizeEmail(request.body.email);
        const user = await usersRepository.findUserForSignIn(db, email);
        const gate = await signInGate(platform, request, email, user?.id);
        if (!gate.allowed) throw new ServiceError('rate_limited', 'too many sign-in attempts; try again later', { retryAfterSec: gate.retryAfterSec });
        const ok = await verifyPassword(request.body.password, user?.passwordHash ?? (await dummyPasswordHash()));
        if (!user || !ok) throw new ServiceError('invalid_credentials', 'email or password is wrong');
        await rememberDevice(platform, request, reply, user.id, sessionCookieOptions(platform).secure);
        const session = await usersRepository.createSession(db, user.id, clock.now());
        setSessionCookie(platform, reply, session.token, session.expiresAt);
        const { passwordHash: _omit, ...publicUser } = user;
        return { user: publicUser };
      },
    });

    app.route({
      ...declared('signOut'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const cred = request.credential;
        if (cred?.kind === 'session') await usersRepository.revokeSession(db, cred.sessionId, clock.now());
        reply.clearCookie(SESSION_COOKIE, sessionCookieOptions(platform));
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('me'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const user = await usersRepository.getUser(db, userIdOf(request));
        if (!user) throw new ServiceError('unauthorized', 'the account no longer exists');
        return { user, credential: { kind: request.credential!.kind as 'session' | 'cli' } };
      },
    });
  };
}
