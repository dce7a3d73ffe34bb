import path from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { FINISHED_DEPLOY_STATES, type DeployState } from '../../schemas/deploys.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import { LOG_PAGE, logPage, readLogLines, revokeShare, shareOf } from './deploy-logs.ts';
import {
  createDeployHook,
  deleteDeployHook,
  getBuildSettings,
  getDeploy,
  listDeployHooks,
  listDeploys,
  queueDeploy,
  cancelDeploy,
  rollbackTo,
  updateBuildSettings,
} from './deploys-repository.ts';
import { errorAnswers, NoContent, SlugIdParams, SlugParams } from '../../schemas/api/common.ts';
import {
  BuildSettingsAnswer,
  BuildSettingsPatch,
  CreateDeployHookBody,
  CreatedDeployHookAnswer,
  DeployAnswer,
  DeployHookList,
  DeployListQuery,
  DeployPage,
  DeployParams,
  DeploySourceMapList,
  LiveDeployAnswer,
  LogPageQuery,
  LogPageSchema,
  LogShareAnswer,
  QueueDeployBody,
  QueuedDeployAnswer,
} from '../../schemas/api/deploys.ts';

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

/** How often a followed log looks for new lines. */
const FOLLOW_POLL_MS = 300;

export function deploysRoutes(platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, bus, clock, config } = platform;
  const served = servedAt(config);
  const base = publicBaseUrl(config);
  return async (app) => {
    app.get(
      '/v1/projects/:slug/deploys/settings',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: {
          tags: ['deploys'],
          summary: 'The build source: repository, branch, command, output, variables',
          params: SlugParams,
          response: { 200: BuildSettingsAnswer },
        },
      },
      async (request) => ({ settings: await getBuildSettings(db, projectOf(request).id) }),
    );

    app.patch(
      '/v1/projects/:slug/deploys/settings',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['deploys'],
          summary: 'Change the build source (console session or CLI)',
          params: SlugParams,
          body: BuildSettingsPatch,
          response: { 200: BuildSettingsAnswer, ...errorAnswers(400) },
        },
      },
      async (request) => {
        const project = projectOf(request);
        const patch = request.body;
        if (patch.repoUrl !== undefined) patch.repoUrl = await checkRepoUrl(platform, patch.repoUrl);
        if (patch.outputDir !== undefined) patch.outputDir = checkRelativeDir(patch.outputDir);
        await updateBuildSettings(db, project.id, patch, clock.now());
        return { settings: await getBuildSettings(db, project.id) };
      },
    );

    app.post(
      '/v1/projects/:slug/deploys',
      {
        config: { auth: AUTH.project('deploys:write') },
        schema: {
          tags: ['deploys'],
          summary: 'Queue a deploy of a branch (production on the default branch, preview otherwise)',
          params: SlugParams,
          body: QueueDeployBody,
          response: { 202: QueuedDeployAnswer, ...errorAnswers(409) },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const branch = request.body.branch ?? (await getBuildSettings(db, project.id)).defaultBranch;
        const credential = request.credential;
        const triggerId = credential?.kind === 'project_key' ? credential.keyId : credential ? userIdOf(request) : null;
        const queued = await queueDeploy(db, bus, { projectId: project.id, branch, trigger: 'api', triggerId, now: clock.now() });
        return reply.code(202).send({ ...queued, deploy: served(queued.deploy) });
      },
    );

    app.get(
      '/v1/projects/:slug/deploys',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: {
          tags: ['deploys'],
          summary: 'Deploys, newest first',
          params: SlugParams,
          querystring: DeployListQuery,
          response: { 200: DeployPage },
        },
      },
      async (request) => {
        const page = await listDeploys(db, projectOf(request).id, request.query);
        return { ...page, data: page.data.map(served) };
      },
    );

    // Hook management: console session only (§5.2 rule 1). Registered before `:deployId` so the static
    // segment wins (Fastify's router prefers it anyway).
    app.post(
      '/v1/projects/:slug/deploys/hooks',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['deploys'],
          summary: 'Create a deploy hook bound to a branch; the token and URL are in this response only',
          params: SlugParams,
          body: CreateDeployHookBody,
          response: { 201: CreatedDeployHookAnswer },
        },
      },
      async (request, reply) => {
        const hook = await createDeployHook(db, projectOf(request).id, request.body.name, request.body.branch, clock.now());
        return reply.code(201).send({ hook: { ...hook, url: `${base}/v1/hooks/${hook.token}` } });
      },
    );

    app.get(
      '/v1/projects/:slug/deploys/hooks',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['deploys'], summary: 'List deploy hooks (hints, never tokens)', params: SlugParams, response: { 200: DeployHookList } },
      },
      async (request) => ({ hooks: await listDeployHooks(db, projectOf(request).id) }),
    );

    app.delete(
      '/v1/projects/:slug/deploys/hooks/:id',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['deploys'],
          summary: 'Delete a deploy hook; its URL answers 404 from now on',
          params: SlugIdParams,
          response: { 204: NoContent, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        await deleteDeployHook(db, projectOf(request).id, request.params.id, clock.now());
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/projects/:slug/deploys/:deployId/logs',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: {
          tags: ['deploys'],
          summary: "A deploy's build log; with Accept: text/event-stream, followed live until the build ends",
          description: `JSON: up to ${LOG_PAGE} lines from \`from\` (seq), with \`nextSeq\` and \`done\`. Server-Sent Events: one \`line\` event per line as the build writes it, then \`end\` with the deploy's final status.`,
          params: DeployParams,
          querystring: LogPageQuery,
          response: { 200: LogPageSchema, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const deploy = await getDeploy(db, project.id, request.params.deployId);
        if (!String(request.headers.accept ?? '').includes('text/event-stream'))
          return logPage(platform.analytics, project.id, deploy.id, deploy.status, request.query.from);
        // Follow: poll the log and the deploy until it finished and every line was sent.
        reply.hijack();
        const out = reply.raw;
        out.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
        let closed = false;
        request.raw.on('close', () => (closed = true));
        let next = request.query.from;
        try {
          while (!closed) {
            const status = (await getDeploy(db, project.id, deploy.id)).status;
            const lines = await readLogLines(platform.analytics, project.id, deploy.id, next, LOG_PAGE);
            for (const l of lines) out.write(`id: ${l.seq}\nevent: line\ndata: ${JSON.stringify(l)}\n\n`);
            if (lines.length) next = lines[lines.length - 1]!.seq + 1;
            if (FINISHED_DEPLOY_STATES.includes(status as DeployState) && lines.length < LOG_PAGE) {
              out.write(`event: end\ndata: ${JSON.stringify({ status })}\n\n`);
              break;
            }
            await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS));
          }
        } catch (err) {
          // The stream has started: the failure can only end it (an `error` event says so).
          request.log.error({ err }, 'following a build log failed');
          out.write(`event: error\ndata: ${JSON.stringify({ error: 'internal', message: 'the log could not be read; reconnect with from=<next seq>' })}\n\n`);
        } finally {
          out.end();
        }
      },
    );

    app.get(
      '/v1/projects/:slug/deploys/:deployId/share',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: {
          tags: ['deploys'],
          summary: "The deploy's shareable log link (made on first ask; valid 7 days)",
          params: DeployParams,
          response: { 200: LogShareAnswer, ...errorAnswers(404) },
        },
      },
      async (request) => {
        const project = projectOf(request);
        const share = await shareOf(db, project.id, request.params.deployId, clock.now());
        return { share: { ...share, url: `${base}/v1/deploy-logs/${project.slug}/${request.params.deployId}?token=${share.token}` } };
      },
    );

    app.delete(
      '/v1/projects/:slug/deploys/:deployId/share',
      {
        config: { auth: AUTH.project('deploys:write') },
        schema: {
          tags: ['deploys'],
          summary: 'Revoke the shareable log link; the next ask makes a new one',
          params: DeployParams,
          response: { 204: NoContent, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        await revokeShare(db, projectOf(request).id, request.params.deployId);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/v1/projects/:slug/deploys/:deployId/cancel',
      {
        config: { auth: AUTH.project('deploys:write') },
        schema: {
          tags: ['deploys'],
          summary: 'Cancel a queued deploy now, or stop a building one (its builder kills the build within seconds)',
          params: DeployParams,
          response: { 200: DeployAnswer, ...errorAnswers(404, 409) },
        },
      },
      async (request) => ({ deploy: served(await cancelDeploy(db, projectOf(request).id, request.params.deployId, clock.now())) }),
    );

    app.post(
      '/v1/projects/:slug/deploys/:deployId/rollback',
      {
        config: { auth: AUTH.project('deploys:write') },
        schema: {
          tags: ['deploys'],
          summary: 'Serve an earlier ready production deploy again, without rebuilding',
          params: DeployParams,
          response: { 200: LiveDeployAnswer, ...errorAnswers(404, 409) },
        },
      },
      async (request) => ({ live: served(await rollbackTo(db, projectOf(request).id, request.params.deployId)) }),
    );

    app.get(
      '/v1/projects/:slug/deploys/:deployId/sourcemaps',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: {
          tags: ['deploys'],
          summary: "The source maps kept from the deploy's build (names, served paths, debug ids, sizes; never content)",
          description:
            'The processor resolves minified stack frames through these (issue 37). They are kept privately: a site serves a `.map` only when the project opts in.',
          params: DeployParams,
          response: { 200: DeploySourceMapList, ...errorAnswers(404) },
        },
      },
      async (request) => {
        // Another project's deploy is not found: the maps are read only once the deploy is this project's.
        const deploy = await getDeploy(db, projectOf(request).id, request.params.deployId);
        return { maps: await sourceMapsRepository.listForDeploy(db, deploy.id) };
      },
    );

    app.get(
      '/v1/projects/:slug/deploys/:deployId',
      {
        config: { auth: AUTH.project('deploys:read') },
        schema: { tags: ['deploys'], summary: 'One deploy', params: DeployParams, response: { 200: DeployAnswer, ...errorAnswers(404) } },
      },
      async (request) => ({ deploy: served(await getDeploy(db, projectOf(request).id, request.params.deployId)) }),
    );
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
