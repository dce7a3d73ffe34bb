import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { usersRepository } from '../accounts/users-repository.ts';
import { declared } from '../declared-route.ts';
import { cliRepository as cli, formatUserCode } from './cli-repository.ts';

/**
 * `/v1/cli`: the device login and the CLI session. Field names of the device flow follow
 * RFC 8628 (device_code, user_code, ...), which device-flow clients already speak. Project API
 * keys are refused on this whole family (spec §5.2 rule 2; enforced by the auth hook).
 * The console's approval page reads `GET /v1/cli/device` (where and when the login started) before approving.
 */
const L = LIMITS.cliDeviceCode;
const WINDOW_MS = 10 * 60 * 1000;
/** The console's approval page (console/app/pages/device.tsx), where the person types or confirms the code. */
const APPROVAL_PAGE = '/cli/device';

export function cliRoutes(platform: Pick<Platform, 'clock' | 'config' | 'db' | 'limiter'>): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  const base = publicBaseUrl(platform.config);
  /** RFC 8628 §5.1: a person tries few codes; a signed-in account guessing others' pending codes is slowed. */
  const checkCodeRate = async (userId: string) => {
    const rate = await limiter.hit(`cli-device-code:${userId}`, L.codeChecksPerUserPer10Min, WINDOW_MS);
    if (!rate.allowed) throw new ServiceError('rate_limited', 'too many device codes tried; try again later', { retryAfterSec: rate.retryAfterSec });
  };
  return async (app) => {
    app.route({
      ...declared('startDeviceLogin'),
      config: { auth: AUTH.public },
      handler: async (request) => {
        const rate = await limiter.hit(`cli-device:${request.ip}`, L.startsPerIpPer10Min, WINDOW_MS);
        if (!rate.allowed)
          throw new ServiceError('rate_limited', 'too many device logins started from this address; try again later', { retryAfterSec: rate.retryAfterSec });
        const started = await cli.startDeviceLogin(
          db,
          request.body?.client_name ?? 'cli',
          { ip: request.ip, userAgent: request.headers['user-agent'] },
          clock.now(),
        );
        const userCode = formatUserCode(started.userCode);
        return {
          device_code: started.deviceCode,
          user_code: userCode,
          verification_uri: `${base}${APPROVAL_PAGE}`,
          verification_uri_complete: `${base}${APPROVAL_PAGE}?user_code=${userCode}`,
          interval: L.pollIntervalSec,
          expires_in: started.expiresInSec,
        };
      },
    });

    app.route({
      ...declared('getDeviceLogin'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        await checkCodeRate(userIdOf(request));
        return cli.describeDeviceLogin(db, request.query.user_code, clock.now());
      },
    });

    app.route({
      ...declared('approveDeviceLogin'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        await checkCodeRate(userIdOf(request));
        const { clientName } = await cli.approveDeviceLogin(db, request.body.user_code, userIdOf(request), clock.now());
        return { approved: true as const, client_name: clientName };
      },
    });

    app.route({
      ...declared('pollDeviceToken'),
      config: { auth: AUTH.public },
      handler: async (request) => {
        const out = await cli.pollDeviceLogin(db, request.body.device_code, clock.now());
        return { access_token: out.token, token_type: 'Bearer' as const, token_id: out.tokenId };
      },
    });

    app.route({
      ...declared('whoami'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const user = await usersRepository.getUser(db, userIdOf(request));
        if (!user) throw new ServiceError('unauthorized', 'the account no longer exists');
        const cred = request.credential!;
        return { user, credential: cred.kind === 'cli' ? { kind: 'cli' as const, tokenId: cred.tokenId } : { kind: 'session' as const } };
      },
    });

    app.route({
      ...declared('listCliTokens'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => ({ tokens: await cli.listTokens(db, userIdOf(request)) }),
    });

    app.route({
      ...declared('revokeCliToken'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => ({ token: await cli.revokeToken(db, userIdOf(request), request.params.id, clock.now()) }),
    });
  };
}
