import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { feedbackRepository } from './feedback-repository.ts';

/**
 * User feedback (issue 40): the project's feedback and an issue's, newest first with a (time, id) cursor
 * (api/time-cursor.ts). Reads need `errors:read`, as the issues they link to; shapes in schemas/api/feedback.ts.
 */
const read = { auth: AUTH.project('errors:read') };

export function feedbackRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    app.route({ ...declared('listFeedback'), config: read, handler: async (request) => feedbackRepository.list(db, projectOf(request).id, request.query) });
    app.route({
      ...declared('listIssueFeedback'),
      config: read,
      handler: async (request) => feedbackRepository.list(db, projectOf(request).id, { ...request.query, issueId: request.params.groupId }),
    });
  };
}
