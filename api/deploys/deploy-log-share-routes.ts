import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { logPage } from './deploy-logs.ts';
import { deploysRepository } from './deploys-repository.ts';

/**
 * `GET /v1/deploy-logs/:slug/:deployId?token=` (§4.2, §5.2 rule 8): a deploy's build log for whoever holds the
 * share link, with no other credential. A wrong, missing, revoked or expired token answers exactly as a deploy
 * that does not exist (404 not_found). Limited per caller IP.
 */
const MINUTE_MS = 60_000;
const PER_IP_PER_MINUTE = 120;

export function deployLogShareRoutes(platform: Pick<Platform, 'analytics' | 'clock' | 'db' | 'limiter'>): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  return async (app) => {
    app.route({
      ...declared('getSharedDeployLog'),
      config: { auth: AUTH.public },
      handler: async (request) => {
        const rate = await limiter.hit(`deploy-logs:ip:${request.ip}`, PER_IP_PER_MINUTE, MINUTE_MS);
        if (!rate.allowed) throw new ServiceError('rate_limited', 'too many requests', { retryAfterSec: rate.retryAfterSec });
        const { slug, deployId } = request.params;
        const d = await deploysRepository.byShare(db, slug, deployId, request.query.token ?? '', clock.now());
        if (!d) throw new ServiceError('not_found', 'no such deploy');
        return logPage(platform.analytics, d.projectId, deployId, d.status, request.query.from);
      },
    });
  };
}
