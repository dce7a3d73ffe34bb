import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { getUser } from '../accounts/users-repository.ts';
import { approveDeviceLogin, describeDeviceLogin, formatUserCode, listCliTokens, pollDeviceLogin, revokeCliToken, startDeviceLogin } from './cli-repository.ts';
import { errorAnswers } from '../../schemas/api/common.ts';
import {
  CliTokenAnswer,
  CliTokenList,
  DeviceApproveAnswer,
  DeviceApproveBody,
  DeviceLogin,
  DeviceLoginQuery,
  DeviceStartAnswer,
  DeviceStartBody,
  DeviceTokenAnswer,
  DeviceTokenBody,
  IdParams,
  WhoamiAnswer,
} from '../../schemas/api/accounts.ts';

/**
 * `/v1/cli`: the device login and the CLI session. Field names of the device flow follow
 * RFC 8628 (device_code, user_code, ...), which device-flow clients already speak. Project API
 * keys are refused on this whole family (spec §5.2 rule 2; enforced by the auth hook).
 * The console's approval page reads `GET /v1/cli/device` (where and when the login started) before approving.
 */
const SERVICE_TOKEN_NOTE =
  'CLI clients send the token as `Authorization: Bearer cx_cli_...`; they also read it from the SERVICE_TOKEN environment variable (CI use).';

const DEVICE_START_WINDOW_MS = 10 * 60 * 1000;
const CODE_CHECKS_PER_USER_PER_10MIN = 30;

export function cliRoutes(platform: Pick<Platform, 'clock' | 'config' | 'db' | 'limiter'>): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  const base = publicBaseUrl(platform.config);
  return async (app) => {
    app.post(
      '/v1/cli/device',
      {
        config: { auth: AUTH.public },
        schema: {
          tags: ['cli'],
          summary: 'Start a CLI device login',
          description: `Show user_code to the person and open verification_uri_complete; poll POST /v1/cli/device/token every \`interval\` seconds. Public, so limited to ${LIMITS.cliDeviceCode.startsPerIpPer10Min} starts per caller IP per 10 minutes (429 rate_limited with Retry-After). ${SERVICE_TOKEN_NOTE}`,
          body: DeviceStartBody,
          response: {
            200: DeviceStartAnswer,
            ...errorAnswers(429),
          },
        },
      },
      async (request) => {
        const rate = await limiter.hit(`cli-device:${request.ip}`, LIMITS.cliDeviceCode.startsPerIpPer10Min, DEVICE_START_WINDOW_MS);
        if (!rate.allowed)
          throw new ServiceError('rate_limited', 'too many device logins started from this address; try again later', { retryAfterSec: rate.retryAfterSec });
        const started = await startDeviceLogin(
          db,
          request.body?.client_name ?? 'cli',
          { ip: request.ip, userAgent: request.headers['user-agent'] },
          clock.now(),
        );
        const userCode = formatUserCode(started.userCode);
        return {
          device_code: started.deviceCode,
          user_code: userCode,
          verification_uri: `${base}/cli/device`,
          verification_uri_complete: `${base}/cli/device?user_code=${userCode}`,
          interval: LIMITS.cliDeviceCode.pollIntervalSec,
          expires_in: started.expiresInSec,
        };
      },
    );

    /** RFC 8628 §5.1: a person tries few codes; a signed-in account guessing others' pending codes is slowed. */
    const checkCodeRate = async (userId: string) => {
      const rate = await limiter.hit(`cli-device-code:${userId}`, CODE_CHECKS_PER_USER_PER_10MIN, DEVICE_START_WINDOW_MS);
      if (!rate.allowed) throw new ServiceError('rate_limited', 'too many device codes tried; try again later', { retryAfterSec: rate.retryAfterSec });
    };

    app.get(
      '/v1/cli/device',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['cli'],
          summary: 'A pending CLI login: who asks, and where and when it started (console session)',
          description: `The approval page shows it before anyone approves (RFC 8628 §5.4). Looking codes up and approving them share a limit of ${CODE_CHECKS_PER_USER_PER_10MIN} per signed-in person per 10 minutes.`,
          querystring: DeviceLoginQuery,
          response: { 200: DeviceLogin, ...errorAnswers(404, 410, 429) },
        },
      },
      async (request) => {
        await checkCodeRate(userIdOf(request));
        return describeDeviceLogin(db, request.query.user_code, clock.now());
      },
    );

    app.post(
      '/v1/cli/device/approve',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['cli'],
          summary: 'Approve a CLI login (console session)',
          body: DeviceApproveBody,
          response: { 200: DeviceApproveAnswer, ...errorAnswers(404, 410, 429) },
        },
      },
      async (request) => {
        await checkCodeRate(userIdOf(request));
        const { clientName } = await approveDeviceLogin(db, request.body.user_code, userIdOf(request), clock.now());
        return { approved: true as const, client_name: clientName };
      },
    );

    app.post(
      '/v1/cli/device/token',
      {
        config: { auth: AUTH.public },
        schema: {
          tags: ['cli'],
          summary: 'Poll for the CLI token',
          description: `428 authorization_pending until approved; then the cx_cli_ token, once; 410 expired_token when the code expired or was already used. A poll sooner than the interval answers 429 slow_down (RFC 8628 §3.5) with the new \`interval\`, 5 s longer, which holds for every later poll. ${SERVICE_TOKEN_NOTE}`,
          body: DeviceTokenBody,
          response: { 200: DeviceTokenAnswer, ...errorAnswers(404, 410, 428, 429) },
        },
      },
      async (request) => {
        const out = await pollDeviceLogin(db, request.body.device_code, clock.now());
        return { access_token: out.token, token_type: 'Bearer' as const, token_id: out.tokenId };
      },
    );

    app.get(
      '/v1/cli/whoami',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['cli'], summary: 'Who the CLI token (or session) belongs to', description: SERVICE_TOKEN_NOTE, response: { 200: WhoamiAnswer } },
      },
      async (request) => {
        const user = await getUser(db, userIdOf(request));
        if (!user) throw new ServiceError('unauthorized', 'the account no longer exists');
        const cred = request.credential!;
        return { user, credential: cred.kind === 'cli' ? { kind: 'cli' as const, tokenId: cred.tokenId } : { kind: 'session' as const } };
      },
    );

    app.get(
      '/v1/cli/tokens',
      { config: { auth: AUTH.sessionOnly }, schema: { tags: ['cli'], summary: "The user's CLI tokens (hints only)", response: { 200: CliTokenList } } },
      async (request) => ({ tokens: await listCliTokens(db, userIdOf(request)) }),
    );

    app.delete(
      '/v1/cli/tokens/:id',
      {
        config: { auth: AUTH.sessionOnly },
        schema: { tags: ['cli'], summary: 'Revoke a CLI token', params: IdParams, response: { 200: CliTokenAnswer, ...errorAnswers(404) } },
      },
      async (request) => ({ token: await revokeCliToken(db, userIdOf(request), request.params.id, clock.now()) }),
    );
  };
}
