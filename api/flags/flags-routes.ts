import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { FlagDefinitionSchema, flagProblems, type FlagDefinition } from '../../schemas/flags.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { flagsRepository } from './flags-repository.ts';
import { declared } from '../declared-route.ts';

/**
 * The project's feature flags (issue 16; shapes in schemas/api/flags.ts). Reads for a session, a CLI token or a key
 * with `flags:read`; writes for a session, a CLI token or a key with `flags:write`. The edge evaluates them from memory
 * (ingest/flags-route.ts); a change reaches it with its next refresh (SETTINGS_REFRESH_MS, 2 s).
 */
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
    app.route({ ...declared('listFlags'), config: read, handler: async (request) => ({ data: await flagsRepository.listFlags(db, projectOf(request).id) }) });

    app.route({
      ...declared('createFlag'),
      config: write,
      handler: async (request, reply) =>
        reply.code(201).send({ flag: await flagsRepository.createFlag(db, projectOf(request).id, checked(request.body), clock.now()) }),
    });

    app.route({
      ...declared('getFlag'),
      config: read,
      handler: async (request) => ({ flag: await flagsRepository.getFlag(db, projectOf(request).id, request.params.key) }),
    });

    app.route({
      ...declared('updateFlag'),
      config: write,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        const { id: _id, createdAt: _c, updatedAt: _u, ...current } = await flagsRepository.getFlag(db, projectId, request.params.key);
        const next = FlagDefinitionSchema.parse({ ...current, ...request.body });
        return { flag: await flagsRepository.replaceFlag(db, projectId, checked(next), clock.now()) };
      },
    });

    app.route({
      ...declared('deleteFlag'),
      config: write,
      handler: async (request) => {
        await flagsRepository.deleteFlag(db, projectOf(request).id, request.params.key);
        return { deleted: true as const };
      },
    });
  };
}
