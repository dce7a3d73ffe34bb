import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { billingRepository } from './billing-repository.ts';

/**
 * `GET /v1/billing` (spec §4.1, §5.2 rule 1: session only): the plan state of each of the user's projects, read from the
 * billing ledger the platform's own Stripe events fill (billing-repository.ts).
 */
export function billingRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    app.route({
      ...declared('billing'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => ({ projects: await billingRepository.plansOfUser(db, userIdOf(request)) }),
    });
  };
}
