import { Readable } from 'node:stream';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import type { DeployPrebuilt } from '../../domain/deploys/prebuilt.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { declared } from '../declared-route.ts';
import { servedAt } from './deploys-routes.ts';
import { deploysRepository as deploys } from './deploys-repository.ts';

/**
 * `POST /v1/projects/:slug/deploys/prebuilt` (issue 42, "Deploy without git"): a .tar.gz of a built directory becomes
 * a deploy (builder/prebuilt-deploy.ts, handed over by the composition root: domain/deploys/prebuilt.ts). The body is handed over as the request's stream, never read whole here: this
 * plugin's only parser passes it through, and a body that is not gzip's media type is 415 before a byte is read.
 */
const GZIP_TYPES = new Set(['application/gzip', 'application/x-gzip', 'application/octet-stream']);

export function prebuiltRoutes(platform: Pick<Platform, 'config' | 'db'>, deployPrebuilt: DeployPrebuilt | undefined): FastifyPluginAsyncZod {
  const served = servedAt(platform.config);
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    app.route({
      ...declared('deployPrebuilt'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        const type = String(request.headers['content-type'] ?? '')
          .split(';')[0]!
          .trim()
          .toLowerCase();
        const body = request.body as unknown;
        if (!GZIP_TYPES.has(type) || !(body instanceof Readable))
          throw new ServiceError('unsupported_media_type', 'send the directory as a .tar.gz body with content-type application/gzip');
        if (!deployPrebuilt) throw new ServiceError('unavailable', 'this API process takes no prebuilt uploads');
        const project = projectOf(request);
        const credential = request.credential;
        const triggerId = credential?.kind === 'project_key' ? credential.keyId : credential ? userIdOf(request) : null;
        try {
          const id = await deployPrebuilt(body, { projectId: project.id, ...request.query, triggerId });
          return reply.code(201).send({ deploy: served(await deploys.get(platform.db, project.id, id)) });
        } catch (err) {
          // Refused before the whole body was read: the connection is not kept for the rest of it.
          if (!body.readableEnded) reply.header('connection', 'close');
          throw err;
        }
      },
    });
  };
}
