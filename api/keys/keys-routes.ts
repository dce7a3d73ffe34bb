import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import { ingestDsn } from '../../platform/sentry-dsn.ts';
import { createKey, listKeys, projectNumber, revokeKey } from './keys-repository.ts';
import { errorAnswers, SlugIdParams, SlugParams } from '../../schemas/api/common.ts';
import { ApiKeyAnswer, ApiKeyList, CreatedKeyAnswer, CreateKeyBody } from '../../schemas/api/keys.ts';

/**
 * `/v1/projects/:slug/keys`. Creating and revoking keys is console-session only (a leaked key or
 * CLI token must not mint more keys); listing is also open to CLI tokens and keys with `keys:read`.
 */
export function keysRoutes(platform: Pick<Platform, 'clock' | 'config' | 'db'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.post(
      '/v1/projects/:slug/keys',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['keys'],
          summary: 'Create an API key or ingest key; the token is in this response only',
          params: SlugParams,
          body: CreateKeyBody,
          response: { 201: CreatedKeyAnswer, ...errorAnswers(400) },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const key = await createKey(db, {
          projectId: projectOf(request).id,
          kind: body.kind,
          name: body.name,
          scopes: body.kind === 'ingest' ? [] : body.scopes,
          createdBy: userIdOf(request),
          now: clock.now(),
        });
        if (key.kind !== 'ingest') return reply.code(201).send({ key });
        const dsn = ingestDsn(key.token, await projectNumber(db, projectOf(request).id), publicBaseUrl(platform.config));
        return reply.code(201).send({ key: { ...key, dsn } });
      },
    );

    app.get(
      '/v1/projects/:slug/keys',
      {
        config: { auth: AUTH.project('keys:read') },
        schema: { tags: ['keys'], summary: "The project's keys (hints only, never tokens)", params: SlugParams, response: { 200: ApiKeyList } },
      },
      async (request) => ({ keys: await listKeys(db, projectOf(request).id) }),
    );

    app.delete(
      '/v1/projects/:slug/keys/:id',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['keys'],
          summary: 'Revoke a key (immediately refused everywhere)',
          params: SlugIdParams,
          response: { 200: ApiKeyAnswer, ...errorAnswers(404) },
        },
      },
      async (request) => ({ key: await revokeKey(db, projectOf(request).id, request.params.id, clock.now()) }),
    );
  };
}
