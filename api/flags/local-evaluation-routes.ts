import { hash } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { localEvaluationAnswer } from '../../domain/posthog-flags.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { flagsRepository } from './flags-repository.ts';
import { declared } from '../declared-route.ts';

/**
 * `flagDefinitions` and `posthogLocalEvaluation` (issue 28; shapes in schemas/api/flags.ts): the project's flags as
 * PostHog's server SDKs fetch them to evaluate locally (posthog-node's `personalApiKey`), written by
 * domain/posthog-flags.ts so local answers are the service's. The credential is a project key with `flags:read`
 * (`Authorization: Bearer cx_live_...`), as PostHog's personal or feature-flags secure key; the `?token=` the SDK also
 * sends, when present, must be an ingest key of the same project (PostHog's "key pair"), else 403. ETag /
 * If-None-Match: the SDK polls every 30 s and a 304 costs it nothing.
 */
export function localEvaluationRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    for (const id of ['flagDefinitions', 'posthogLocalEvaluation'] as const) {
      app.route({
        ...declared(id),
        config: { auth: { keyScope: 'flags:read' } },
        handler: async (request, reply) => {
          const project = projectOf(request);
          const token = request.query.token;
          if (token && (await flagsRepository.ingestKeyProject(db, token)) !== project.id)
            throw new ServiceError('forbidden', 'the token is not an ingest key of this key’s project');
          const answer = localEvaluationAnswer(await flagsRepository.listFlags(db, project.id));
          const etag = `"${hash('sha1', JSON.stringify(answer), 'base64url').slice(0, 22)}"`;
          reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
          const asked = request.headers['if-none-match'];
          if (typeof asked === 'string' && asked.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) return reply.code(304).send();
          return answer;
        },
      });
    }
  };
}
