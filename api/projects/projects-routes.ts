import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { projectsRepository } from './projects-repository.ts';
import { deploysRepository } from '../deploys/deploys-repository.ts';
import { servedAt } from '../deploys/deploys-routes.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import { routePath } from '../../schemas/api/client.ts';
import { declared } from '../declared-route.ts';

/** `/v1/projects`: create, list, the dashboard rollup (spec §1), and settings (name, branch, environment hosts, source maps). */
export function projectsRoutes(platform: Pick<Platform, 'config' | 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  const served = servedAt(platform.config);
  return async (app) => {
    app.route({
      ...declared('createProject'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const project = await projectsRepository.createProject(db, { ownerId: userIdOf(request), ...request.body });
        return reply.code(201).send({ project });
      },
    });

    app.route({
      ...declared('listProjects'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ projects: await projectsRepository.listProjectsOfUser(db, userIdOf(request)) }),
    });

    app.route({
      ...declared('getProject'),
      config: { auth: AUTH.project('project:read') },
      handler: async (request) => {
        const ref = projectOf(request);
        const project = await projectsRepository.getProject(db, ref.id);
        if (!project) throw new ServiceError('not_found', 'project not found');
        const [counts, deploys] = await Promise.all([projectsRepository.projectCounts(db, ref.id), deploysRepository.rollup(db, ref.id)]);
        const params = { slug: project.slug };
        return {
          project: {
            ...project,
            keys: counts.keys,
            errors: { open: counts.openErrors.total, openByEnvironment: counts.openErrors.byEnvironment },
            deploys: { live: deploys.live && served(deploys.live), previews: deploys.previews.map(served) },
            // `site`: where the live production deploy is served (nothing until one is ready).
            links: {
              self: routePath('getProject', params),
              keys: routePath('listKeys', params),
              errors: routePath('listIssues', params),
              errorSettings: routePath('getErrorSettings', params),
              webhooks: routePath('listWebhookEndpoints', params),
              deploys: routePath('listDeploys', params),
              ...(deploys.live ? { site: siteUrls(platform.config).project(project.slug) } : {}),
            },
          },
        };
      },
    });

    app.route({
      ...declared('updateProject'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ project: await projectsRepository.updateProject(db, projectOf(request).id, request.body) }),
    });
  };
}
