import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import { ingestDsn } from '../../platform/sentry-dsn.ts';
import { keysRepository } from './keys-repository.ts';
import { declared } from '../declared-route.ts';

/**
 * `/v1/projects/:slug/keys`. Creating and revoking keys is console-session only (a leaked key or
 * CLI token must not mint more keys); listing is also open to CLI tokens and keys with `keys:read`.
 */
export function keysRoutes(platform: Pick<Platform, 'clock' | 'config' | 'db'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.route({
      ...declared('createKey'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const body = request.body;
        const key = await keysRepository.createKey(db, {
          projectId: projectOf(request).id,
          kind: body.kind,
          name: body.name,
          scopes: body.kind === 'ingest' ? [] : body.scopes,
          createdBy: userIdOf(request),
          now: clock.now(),
        });
        if (key.kind !== 'ingest') return reply.code(201).send({ key });
        const dsn = ingestDsn(key.token, await keysRepository.projectNumber(db, projectOf(request).id), publicBaseUrl(platform.config));
        return reply.code(201).send({ key: { ...key, dsn } });
      },
    });

    app.route({
      ...declared('listKeys'),
      config: { auth: AUTH.project('keys:read') },
      handler: async (request) => ({ keys: await keysRepository.listKeys(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('revokeKey'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ key: await keysRepository.revokeKey(db, projectOf(request).id, request.params.id, clock.now()) }),
    });
  };
}
