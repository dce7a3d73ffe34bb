import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { declared } from '../declared-route.ts';
import { envRepository as env } from './env-repository.ts';

/**
 * `/v1/projects/:slug/env` (issue 42): a project's build variables per environment, for the console, the CLI
 * (`cx env add|ls|rm`) and the API. Read as the build settings are (deploys:read); written by a user (console
 * session or CLI), as the build settings are. The builder reads them at each build (builder/build-variables.ts).
 */
export function envRoutes(platform: Pick<Platform, 'clock' | 'db'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.route({
      ...declared('listEnvVars'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => ({ env: await env.list(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('createEnvVar'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => reply.code(201).send({ env: await env.create(db, projectOf(request).id, request.body, clock.now()) }),
    });

    app.route({
      ...declared('updateEnvVar'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ env: await env.update(db, projectOf(request).id, request.params.id, request.body, clock.now()) }),
    });

    app.route({
      ...declared('deleteEnvVar'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        await env.remove(db, projectOf(request).id, request.params.id);
        return reply.code(204).send(null);
      },
    });
  };
}
