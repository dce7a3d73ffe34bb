import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { queueDeploy } from '../../domain/deploys/queue-deploy.ts';
import { declared } from '../declared-route.ts';
import { deploysRepository } from './deploys-repository.ts';
import { checkHookSignature } from './hook-signature.ts';

/**
 * `POST /v1/hooks/:token` (spec §2.4, §4.4, §5.2 rule 7): the token in the URL is the credential.
 *   1. rate limit per caller IP                                     429 rate_limited
 *   2. the token names a live hook                                  404 not_found (unknown and deleted alike)
 *   3. rate limit per token                                         429 rate_limited
 *   4. a signature header, when present, matches the raw body       401 invalid_signature
 *   5. queue a deploy of the hook's branch                          202 { deployId }; 409 production_deploy_busy
 * The body is read raw (any content type, at most LIMITS.deploys.hookBodyBytes; 413 past it) and used only
 * for the signature: a code host's push payload is accepted as it is. No query parameter is taken (the route's
 * description, schemas/api/deploys.ts, says why): one is refused before step 1.
 */
const MINUTE_MS = 60_000;
const D = LIMITS.deploys;

export function hookRoutes(platform: Pick<Platform, 'bus' | 'clock' | 'db' | 'limiter'>): FastifyPluginAsyncZod {
  const { db, bus, clock, limiter } = platform;
  return async (app) => {
    // This plugin's own parsers: every body as raw bytes (the HMAC is over exactly what was sent).
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: D.hookBodyBytes }, (_request, body, done) => done(null, body));

    app.route({
      ...declared('triggerDeployHook'),
      config: { auth: AUTH.public },
      bodyLimit: D.hookBodyBytes,
      handler: async (request, reply) => {
        const token = request.params.token;
        const now = clock.now();
        // 1. per caller IP, before any database work.
        const byIp = await limiter.hit(`hook:ip:${request.ip}`, D.hookCallsPerIpPerMinute, MINUTE_MS);
        if (!byIp.allowed) throw new ServiceError('rate_limited', 'too many deploy hook calls from this address', { retryAfterSec: byIp.retryAfterSec });
        // 2. a live hook
        const hook = token.startsWith(TOKEN_PREFIX.deployHook) ? await deploysRepository.hookByToken(db, token, now) : undefined;
        if (!hook) throw new ServiceError('not_found', 'no such deploy hook');
        // 3. per token
        const byToken = await limiter.hit(`hook:token:${tokenHash(token)}`, D.hookCallsPerTokenPerMinute, MINUTE_MS);
        if (!byToken.allowed) throw new ServiceError('rate_limited', 'too many calls of this deploy hook', { retryAfterSec: byToken.retryAfterSec });
        // 4. signature
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        if (checkHookSignature(raw, token, request.headers) === 'invalid')
          throw new ServiceError('invalid_signature', 'the signature header does not match the body (HMAC-SHA256 keyed with the hook token)');
        // 5. queue
        const { deploy, deduplicated } = await queueDeploy(db, bus, {
          projectId: hook.projectId,
          branch: hook.branch,
          trigger: 'hook',
          triggerId: hook.id,
          now,
        });
        return reply.code(202).send({ deployId: deploy.id, deduplicated });
      },
    });
  };
}
