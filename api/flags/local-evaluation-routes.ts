import { hash } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { errorAnswers } from '../../schemas/api/common.ts';
import { localEvaluationAnswer } from '../../domain/posthog-flags.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { listFlags } from './flags-repository.ts';

/**
 * `GET /flags/definitions` and `GET /api/feature_flag/local_evaluation` (issue 28): the project's flags as PostHog's
 * server SDKs fetch them to evaluate locally (posthog-node's `personalApiKey`), written by domain/posthog-flags.ts so
 * local answers are the service's. The credential is a project key with `flags:read` (`Authorization: Bearer
 * cx_live_...`), as PostHog's personal or feature-flags secure key; the `?token=` the SDK also sends, when present,
 * must be an ingest key of the same project (PostHog's "key pair"), else 403. ETag / If-None-Match: the SDK polls
 * every 30 s and a 304 costs it nothing.
 */
const Query = z.object({ token: z.string().max(200).optional(), send_cohorts: z.string().optional() });
const Definitions = z.object({
  flags: z.array(z.looseObject({ key: z.string() })).describe("PostHog's flag definitions (filters.groups, multivariate, payloads)"),
  group_type_mapping: z.record(z.string(), z.string()),
  cohorts: z.record(z.string(), z.unknown()),
});

export function localEvaluationRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    for (const path of ['/flags/definitions', '/api/feature_flag/local_evaluation']) {
      app.get(
        path,
        {
          config: { auth: { keyScope: 'flags:read' } },
          schema: {
            tags: ['flags'],
            summary: "PostHog's server SDKs' local evaluation: the project's flags as PostHog definitions (a key with flags:read)",
            querystring: Query,
            response: { 200: Definitions, 304: z.void().describe('not changed since the ETag given'), ...errorAnswers(401, 403) },
          },
        },
        async (request, reply) => {
          const project = projectOf(request);
          const token = request.query.token;
          if (token) {
            const { rows } = await db.query<{ project_id: string }>(
              "SELECT project_id FROM api_keys WHERE token_hash = $1 AND kind = 'ingest' AND revoked_at IS NULL",
              [tokenHash(token)],
            );
            if (rows[0]?.project_id !== project.id) throw new ServiceError('forbidden', 'the token is not an ingest key of this key’s project');
          }
          const answer = localEvaluationAnswer(await listFlags(db, project.id));
          const etag = `"${hash('sha1', JSON.stringify(answer), 'base64url').slice(0, 22)}"`;
          reply.header('ETag', etag).header('Cache-Control', 'private, no-cache');
          const asked = request.headers['if-none-match'];
          if (typeof asked === 'string' && asked.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) return reply.code(304).send();
          return answer;
        },
      );
    }
  };
}
