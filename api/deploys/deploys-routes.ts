import path from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { routePath } from '../../schemas/api/client.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import { queueDeploy } from '../../domain/deploys/queue-deploy.ts';
import { buildCacheDir, clearBuildCache, markCacheSkipped, unmarkCacheSkipped } from '../../domain/deploys/build-cache-files.ts';
import { resolveOnDeploy } from '../../domain/issue-events/resolve-on-deploy.ts';
import { declared } from '../declared-route.ts';
import { githubConnectionsRepository as githubConnections } from '../integrations/github-repository.ts';
import { githubWebUrl } from '../../platform/github-app.ts';
import { followLog, logPage } from './deploy-logs.ts';
import { deploysRepository as deploys } from './deploys-repository.ts';

/**
 * `/v1/projects/:slug/deploys` (spec §4.1 "builds and rollback", §4.4): the project's build source,
 * queueing and reading deploys, and deploy-hook management (console session only, §5.2 rule 1).
 * The hook call itself is public: hook-routes.ts.
 */

/** A deploy as the API shows it: with the URL it is served at, once ready (platform/sites/site-urls.ts). */
export function servedAt(config: Parameters<typeof siteUrls>[0]) {
  const urls = siteUrls(config);
  return <D extends { id: string; status: string }>(d: D): D & { url: string | null } => ({ ...d, url: d.status === 'ready' ? urls.deploy(d.id) : null });
}

export function deploysRoutes(platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, bus, clock, config } = platform;
  const served = servedAt(config);
  const base = publicBaseUrl(config);
  return async (app) => {
    app.route({
      ...declared('getDeploySettings'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => ({ settings: await deploys.buildSettings(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('updateDeploySettings'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const project = projectOf(request);
        const patch = request.body;
        if (patch.repoUrl !== undefined) patch.repoUrl = await checkRepoUrl(platform, patch.repoUrl);
        if (patch.outputDir !== undefined) patch.outputDir = checkRelativeDir(patch.outputDir);
        await deploys.updateBuildSettings(db, project.id, patch, clock.now());
        return { settings: await deploys.buildSettings(db, project.id) };
      },
    });

    app.route({
      ...declared('queueDeploy'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const settings = await deploys.buildSettings(db, project.id);
        // Nothing to build from: refused before a deploy exists (issue 42), rather than a deploy that fails at once.
        if (settings.repoUrl === null)
          throw new ServiceError(
            'source_missing',
            `the project has no build source: set one with \`cx link --repo <url>\` (PATCH ${ROUTES.updateDeploySettings.path}), or deploy a built directory with \`cx deploy --prebuilt <dir>\``,
          );
        const branch = request.body?.branch ?? settings.defaultBranch;
        const credential = request.credential;
        const triggerId = credential?.kind === 'project_key' ? credential.keyId : credential ? userIdOf(request) : null;
        // "Redeploy without cache" (issue 42): marked before the deploy exists, so whichever builder claims it sees it.
        const skipCache = (request.query.cache === 'false' || request.body?.cache === false) && config.BUILD_CACHE_MAX_MB > 0;
        const cacheDir = buildCacheDir(config.DATA_DIR);
        const prepare = skipCache
          ? { before: (id: string) => markCacheSkipped(cacheDir, project.id, id), undo: (id: string) => unmarkCacheSkipped(cacheDir, project.id, id) }
          : undefined;
        const queued = await queueDeploy(db, bus, { projectId: project.id, branch, trigger: 'api', triggerId, now: clock.now(), prepare });
        return reply.code(202).send({ ...queued, deploy: served(queued.deploy) });
      },
    });

    app.route({
      ...declared('listDeploys'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => {
        const page = await deploys.list(db, projectOf(request).id, request.query);
        return { ...page, data: page.data.map(served) };
      },
    });

    // Hook management: console session only (§5.2 rule 1). Registered before `:deployId` so the static
    // segment wins (Fastify's router prefers it anyway).
    app.route({
      ...declared('createDeployHook'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const hook = await deploys.createHook(db, projectOf(request).id, request.body.name, request.body.branch, clock.now());
        return reply.code(201).send({ hook: { ...hook, url: `${base}${routePath('triggerDeployHook', { token: hook.token })}` } });
      },
    });

    app.route({
      ...declared('listDeployHooks'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ hooks: await deploys.listHooks(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('deleteDeployHook'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        await deploys.deleteHook(db, projectOf(request).id, request.params.id, clock.now());
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('clearBuildCache'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        await clearBuildCache(buildCacheDir(config.DATA_DIR), projectOf(request).id);
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('getDeployLogs'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const deploy = await deploys.get(db, project.id, request.params.deployId);
        if (String(request.headers.accept ?? '').includes('text/event-stream')) return followLog(platform, request, reply, deploy, request.query.from);
        return logPage(platform.analytics, project.id, deploy.id, deploy.status, request.query.from);
      },
    });

    app.route({
      ...declared('getDeployLogShare'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => {
        const project = projectOf(request);
        const { deployId } = request.params;
        const share = await deploys.share(db, project.id, deployId, clock.now());
        return { share: { ...share, url: `${base}${routePath('getSharedDeployLog', { slug: project.slug, deployId }, { token: share.token })}` } };
      },
    });

    app.route({
      ...declared('revokeDeployLogShare'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request, reply) => {
        await deploys.revokeShare(db, projectOf(request).id, request.params.deployId);
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('cancelDeploy'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request) => ({ deploy: served(await deploys.cancel(db, projectOf(request).id, request.params.deployId, clock.now())) }),
    });

    app.route({
      ...declared('rollbackDeploy'),
      config: { auth: AUTH.project('deploys:write') },
      handler: async (request) => {
        const projectId = projectOf(request).id;
        const live = await deploys.rollbackTo(db, projectId, request.params.deployId);
        // A deploy made live that was created after an issue's resolve-in-next-deploy mark resolves it (issue 41); a
        // rollback to the marked deploy or an older one resolves nothing. The rollback stands when this fails (logged).
        await resolveOnDeploy(platform, publicBaseUrl(config), projectId, live.id).catch((err) =>
          request.log.error({ err, projectId }, 'resolving the issues marked before this deploy failed'),
        );
        return { live: served(live) };
      },
    });

    app.route({
      ...declared('listDeploySourceMaps'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => {
        // Another project's deploy is not found: the maps are read only once the deploy is this project's.
        const deploy = await deploys.get(db, projectOf(request).id, request.params.deployId);
        return { maps: await sourceMapsRepository.listForDeploy(db, deploy.id) };
      },
    });

    app.route({
      ...declared('getDeploy'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => {
        const projectId = projectOf(request).id;
        const deploy = served(await deploys.get(db, projectId, request.params.deployId));
        return { deploy, github: await githubConnections.deployGithub(db, projectId, deploy.id, githubWebUrl(config.GITHUB_API_URL)) };
      },
    });
  };
}

/** https:// through the outbound URL guard (public hosts only); local paths and file:// only when the setting allows. */
async function checkRepoUrl(platform: Pick<Platform, 'config' | 'outbound'>, raw: string): Promise<string> {
  const local = raw.startsWith('/') || raw.startsWith('file://');
  if (local) {
    if (!platform.config.ALLOW_LOCAL_REPOS)
      throw new ServiceError('invalid_request', 'repoUrl must be an https:// repository (local paths need ALLOW_LOCAL_REPOS=true)');
    return raw;
  }
  return checkedUrl(platform, raw, 'repository', 'repoUrl');
}

/** A directory inside the checked-out tree. */
function checkRelativeDir(dir: string): string {
  const normal = path.posix.normalize(dir.replace(/\\/g, '/'));
  if (path.posix.isAbsolute(normal) || normal === '..' || normal.startsWith('../'))
    throw new ServiceError('invalid_request', 'outputDir must be a directory inside the repository');
  return normal;
}
