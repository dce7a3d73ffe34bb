import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { FlagDefinitionSchema, flagProblems, type FlagDefinition } from '../../schemas/flags.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { createFlag, deleteFlag, getFlag, listFlags, replaceFlag } from './flags-repository.ts';
import { errorAnswers, SlugParams } from '../../schemas/api/common.ts';
import { CreateFlagBody, DeletedAnswer, FlagAnswer, FlagKeyParams, FlagList, PatchFlagBody } from '../../schemas/api/flags.ts';

/**
 * `/v1/projects/:slug/flags` (issue 16): feature flags. Reads for a session, a CLI token or a key with `flags:read`;
 * writes for a session, a CLI token or a key with `flags:write`. The edge evaluates them at `GET /v1/flags/i` from
 * memory (ingest/flags-route.ts); a change reaches it with its next refresh (SETTINGS_REFRESH_MS, 2 s).
 */
const Errors = errorAnswers(400, 404, 409);

function checked(def: FlagDefinition): FlagDefinition {
  const problems = flagProblems(def);
  if (problems.length) throw new ServiceError('invalid_request', `invalid flag: ${problems.map((p) => p.message).join('; ')}`, { fields: problems });
  return def;
}

export function flagsRoutes(platform: Pick<Platform, 'clock' | 'db'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const read = { auth: AUTH.project('flags:read') };
  const write = { auth: AUTH.project('flags:write') };
  return async (app) => {
    app.get(
      '/v1/projects/:slug/flags',
      { config: read, schema: { tags: ['flags'], summary: "The project's feature flags", params: SlugParams, response: { 200: FlagList, ...Errors } } },
      async (request) => ({
        data: await listFlags(db, projectOf(request).id),
      }),
    );

    app.post(
      '/v1/projects/:slug/flags',
      {
        config: write,
        schema: {
          tags: ['flags'],
          summary:
            'Create a flag: key, description, enabled, rolloutPercentage (0-100), variants with weights adding to 100, payload (JSON), conditions on properties and environments',
          params: SlugParams,
          body: CreateFlagBody,
          response: { 201: FlagAnswer, ...Errors },
        },
      },
      async (request, reply) => reply.code(201).send({ flag: await createFlag(db, projectOf(request).id, checked(request.body), clock.now()) }),
    );

    app.get(
      '/v1/projects/:slug/flags/:key',
      { config: read, schema: { tags: ['flags'], summary: 'One flag', params: FlagKeyParams, response: { 200: FlagAnswer, ...Errors } } },
      async (request) => ({
        flag: await getFlag(db, projectOf(request).id, request.params.key),
      }),
    );

    app.patch(
      '/v1/projects/:slug/flags/:key',
      {
        config: write,
        schema: {
          tags: ['flags'],
          summary: 'Change a flag (any field but its key)',
          params: FlagKeyParams,
          body: PatchFlagBody,
          response: { 200: FlagAnswer, ...Errors },
        },
      },
      async (request) => {
        const projectId = projectOf(request).id;
        const { id: _id, createdAt: _c, updatedAt: _u, ...current } = await getFlag(db, projectId, request.params.key);
        const next = FlagDefinitionSchema.parse({ ...current, ...request.body });
        return { flag: await replaceFlag(db, projectId, checked(next), clock.now()) };
      },
    );

    app.delete(
      '/v1/projects/:slug/flags/:key',
      { config: write, schema: { tags: ['flags'], summary: 'Delete a flag', params: FlagKeyParams, response: { 200: DeletedAnswer, ...Errors } } },
      async (request) => {
        await deleteFlag(db, projectOf(request).id, request.params.key);
        return { deleted: true as const };
      },
    );
  };
}
