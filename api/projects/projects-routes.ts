import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { createProject, getProject, listProjectsOfUser, projectCounts, updateProject } from './projects-repository.ts';
import { deploysRepository } from '../deploys/deploys-repository.ts';
import { servedAt } from '../deploys/deploys-routes.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import { CreateProjectBody, PatchProjectBody, ProjectAnswer, ProjectList, ProjectRollupAnswer } from '../../schemas/api/projects.ts';
import { errorAnswers, SlugParams } from '../../schemas/api/common.ts';

/** `/v1/projects`: create, list, the dashboard rollup (spec §1), and settings (name, branch, domains, source maps). */
export function projectsRoutes(platform: Pick<Platform, 'config' | 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  const served = servedAt(platform.config);
  return async (app) => {
    app.post(
      '/v1/projects',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['projects'], summary: 'Create a project', body: CreateProjectBody, response: { 201: ProjectAnswer, ...errorAnswers(409) } },
      },
      async (request, reply) => {
        const project = await createProject(db, { ownerId: userIdOf(request), ...request.body });
        return reply.code(201).send({ project });
      },
    );

    app.get(
      '/v1/projects',
      { config: { auth: AUTH.user }, schema: { tags: ['projects'], summary: "The signed-in user's projects", response: { 200: ProjectList } } },
      async (request) => ({ projects: await listProjectsOfUser(db, userIdOf(request)) }),
    );

    app.get(
      '/v1/projects/:slug',
      {
        config: { auth: AUTH.project('project:read') },
        schema: {
          tags: ['projects'],
          summary: 'Dashboard rollup of one project',
          params: SlugParams,
          response: { 200: ProjectRollupAnswer, ...errorAnswers(404) },
        },
      },
      async (request) => {
        const ref = projectOf(request);
        const project = await getProject(db, ref.id);
        if (!project) throw new ServiceError('not_found', 'project not found');
        const [counts, deploys] = await Promise.all([projectCounts(db, ref.id), deploysRepository.rollup(db, ref.id)]);
        const base = `/v1/projects/${project.slug}`;
        return {
          project: {
            ...project,
            keys: counts.keys,
            errors: { open: counts.openErrors.total, openByEnvironment: counts.openErrors.byEnvironment },
            deploys: { live: deploys.live && served(deploys.live), previews: deploys.previews.map(served) },
            // `site`: where the live production deploy is served (nothing until one is ready).
            links: {
              self: base,
              keys: `${base}/keys`,
              errors: `${base}/errors`,
              errorSettings: `${base}/errors/settings`,
              webhooks: `${base}/webhooks`,
              deploys: `${base}/deploys`,
              ...(deploys.live ? { site: siteUrls(platform.config).project(project.slug) } : {}),
            },
          },
        };
      },
    );

    app.patch(
      '/v1/projects/:slug',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['projects'],
          summary: 'Change name, default branch, domains, or whether the sites serve their source maps',
          params: SlugParams,
          body: PatchProjectBody,
          response: { 200: ProjectAnswer },
        },
      },
      async (request) => ({ project: await updateProject(db, projectOf(request).id, request.body) }),
    );
  };
}
