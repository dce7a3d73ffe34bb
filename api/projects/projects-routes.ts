import { hashPassword } from '../../platform/passwords.ts';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { projectsRepository } from './projects-repository.ts';
import { type PreviewLinkRow, previewLinksRepository } from './preview-links-repository.ts';
import { PREVIEW_LINKS, PREVIEW_SHARE_PREFIX } from '../../schemas/api/projects.ts';
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
      handler: async (request) => {
        const password = request.body.previewProtection?.password;
        const hash = password === undefined ? undefined : password === null ? null : await hashPassword(password);
        return { project: await projectsRepository.updateProject(db, projectOf(request).id, request.body, hash) };
      },
    });

    // Share links of protected previews (issue 42): made and revoked like a deploy log's share link.
    app.route({
      ...declared('createPreviewLink'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const { days, deployId } = request.body;
        if (deployId !== undefined) await deploysRepository.get(db, project.id, deployId); // 404 for another project's
        const made = await previewLinksRepository.create(db, project.id, creatorOf(request), days, PREVIEW_LINKS.maxOpen);
        if (!made) throw new ServiceError('conflict', `at most ${PREVIEW_LINKS.maxOpen} preview links open at once: revoke one first`);
        const linkPath = `${PREVIEW_SHARE_PREFIX}${made.token}`;
        const url = deployId === undefined ? null : `${siteUrls(platform.config).deploy(deployId).replace(/\/$/, '')}${linkPath}`;
        return reply.code(201).send({ link: { ...linkOf(made.row), token: made.token, path: linkPath, url } });
      },
    });

    app.route({
      ...declared('listPreviewLinks'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => ({ links: (await previewLinksRepository.list(db, projectOf(request).id, PREVIEW_LINKS.listed)).map(linkOf) }),
    });

    app.route({
      ...declared('revokePreviewLink'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        if (!(await previewLinksRepository.revoke(db, projectOf(request).id, request.params.id))) throw new ServiceError('not_found', 'no such preview link');
        return reply.code(204).send(null);
      },
    });
  };
}

const iso = (d: Date | string) => new Date(d).toISOString();
const linkOf = (r: PreviewLinkRow) => ({
  id: r.id,
  createdAt: iso(r.created_at),
  expiresAt: iso(r.expires_at),
  revokedAt: r.revoked_at ? iso(r.revoked_at) : null,
});
/** Who made a link: the user, or nobody for a project key. */
const creatorOf = (request: FastifyRequest) => (request.credential && request.credential.kind !== 'project_key' ? request.credential.userId : null);
