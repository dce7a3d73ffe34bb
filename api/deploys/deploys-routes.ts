import path from 'node:path';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBaseUrl } from '../../platform/config.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import type { Platform } from '../../platform/platform.ts';
import { validateWebhookUrl, WebhookUrlError } from '../../platform/webhook-url-guard.ts';
import { BranchSchema, FINISHED_DEPLOY_STATES, type DeployState } from '../../schemas/deploys.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
import { LOG_PAGE, logPage, readLogLines, revokeShare, shareOf } from './deploy-logs.ts';
import {
  createDeployHook,
  DEPLOY_LIST,
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

/**
 * `/v1/projects/:slug/deploys` (spec §4.1 "builds and rollback", §4.4): the project's build source,
 * queueing and reading deploys, and deploy-hook management (console session only, §5.2 rule 1).
 * The hook call itself is public: hook-routes.ts.
 */
const Params = z.object({ slug: z.string() });
const DeployParams = z.object({ slug: z.string(), deployId: z.string().max(64) });
const HookParams = z.object({ slug: z.string(), id: z.string().max(64) });

/** A deploy as the API shows it: with the URL it is served at, once ready (platform/sites/site-urls.ts). */
export function servedAt(config: Parameters<typeof siteUrls>[0]) {
  const urls = siteUrls(config);
  return <D extends { id: string; status: string }>(d: D): D & { url: string | null } => ({ ...d, url: d.status === 'ready' ? urls.deploy(d.id) : null });
}

export const DeploySchema = z.object({
  id: z.string().describe('`dep_...`'),
  projectId: z.string(),
  branch: z.string(),
  environment: z.enum(['production', 'preview']),
  status: z.string().describe('queued -> building -> ready | failed | canceled'),
  gitSha: z.string().nullable(),
  trigger: z.object({ kind: z.string().describe('hook, api or rollback'), id: z.string().nullable().describe('the hook id, or the user who asked') }),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  failureReason: z.string().nullable().describe('checkout_failed, build_failed (see exitCode), timeout, output_missing, builder_lost, source_missing'),
  exitCode: z.number().int().nullable(),
  url: z.string().nullable().describe('where this deploy is served (its own host), once ready'),
});

const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');
const BuildSettingsSchema = z.object({
  repoUrl: z.string().nullable(),
  defaultBranch: z.string().describe('deploys of this branch are production; every other branch is a preview'),
  buildCommand: z.string(),
  outputDir: z.string(),
  env: z.array(z.object({ name: z.string(), secret: z.boolean(), value: z.string().nullable().describe('null for secrets: write-only'), hint: z.string().nullable() })),
});
const BuildSettingsPatchSchema = z
  .object({
    repoUrl: z.string().max(2048).optional().describe('https:// repository (the webhook URL guard applies to its host); local paths and file:// only when ALLOW_LOCAL_REPOS'),
    defaultBranch: BranchSchema.optional(),
    buildCommand: z.string().max(4096).optional().describe('run with `sh -c` in the checked-out tree; empty: no build, the tree is the output'),
    outputDir: z.string().max(1024).optional().describe('relative to the tree; kept as the deploy\'s artifact and served'),
    env: z.record(EnvNameSchema, z.object({ value: z.string().max(65536), secret: z.boolean().optional() }).nullable()).optional(),
  })
  .strict();

export const LogLineSchema = z.object({ seq: z.number().int(), at: z.string(), stream: z.string().describe('stdout, stderr or system (the builder\'s own notes)'), line: z.string() });
/** How often a followed log looks for new lines. */
const FOLLOW_POLL_MS = 300;
const HookSchema = z.object({ id: z.string().describe('`dhk_...`'), name: z.string(), branch: z.string(), hint: z.string(), createdAt: z.string(), lastUsedAt: z.string().nullable() });

/** `deployTopic`: tests sharing one Kafka cluster use a topic of their own (defaults to TOPICS.deployRequests). */
export function deploysRoutes(platform: Platform, opts: { deployTopic?: string } = {}): FastifyPluginAsyncZod {
  const { db, bus, clock, config } = platform;
  const served = servedAt(config);
  const base = publicBaseUrl(config);
  return async (app) => {
    app.get(
      '/v1/projects/:slug/deploys/settings',
      { config: { auth: AUTH.project('deploys:read') }, schema: { tags: ['deploys'], summary: 'The build source: repository, branch, command, output, variables', params: Params, response: { 200: z.object({ settings: BuildSettingsSchema }) } } },
      async (request) => ({ settings: await getBuildSettings(db, projectOf(request).id) }),
    );

    app.patch(
      '/v1/projects/:slug/deploys/settings',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['deploys'], summary: 'Change the build source (console session or CLI)', params: Params, body: BuildSettingsPatchSchema, response: { 200: z.object({ settings: BuildSettingsSchema }), 400: ErrorBodySchema } },
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
          params: Params,
          body: z.object({ branch: BranchSchema.optional().describe('defaults to the project\'s default branch') }).strict(),
          response: { 202: z.object({ deploy: DeploySchema, deduplicated: z.boolean() }), 409: ErrorBodySchema },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const branch = request.body.branch ?? (await getBuildSettings(db, project.id)).defaultBranch;
        const credential = request.credential;
        const triggerId = credential?.kind === 'project_key' ? credential.keyId : credential ? userIdOf(request) : null;
        const queued = await queueDeploy(db, bus, { projectId: project.id, branch, trigger: 'api', triggerId, now: clock.now() }, opts.deployTopic);
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
          params: Params,
          querystring: z.object({ limit: z.coerce.number().int().min(1).max(DEPLOY_LIST.max).default(DEPLOY_LIST.default), cursor: z.string().max(512).optional() }),
          response: { 200: z.object({ data: z.array(DeploySchema), hasMore: z.boolean(), nextCursor: z.string().nullable() }) },
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
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['deploys'],
          summary: 'Create a deploy hook bound to a branch; the token and URL are in this response only',
          params: Params,
          body: z.object({ name: z.string().trim().min(1).max(100), branch: BranchSchema }).strict(),
          response: { 201: z.object({ hook: HookSchema.extend({ token: z.string().describe('`cxhook_...`, shown once'), url: z.string().describe('POST here to queue a deploy') }) }) },
        },
      },
      async (request, reply) => {
        const hook = await createDeployHook(db, projectOf(request).id, request.body.name, request.body.branch, clock.now());
        return reply.code(201).send({ hook: { ...hook, url: `${base}/v1/hooks/${hook.token}` } });
      },
    );

    app.get(
      '/v1/projects/:slug/deploys/hooks',
      { config: { auth: AUTH.sessionOnly }, schema: { tags: ['deploys'], summary: 'List deploy hooks (hints, never tokens)', params: Params, response: { 200: z.object({ hooks: z.array(HookSchema) }) } } },
      async (request) => ({ hooks: await listDeployHooks(db, projectOf(request).id) }),
    );

    app.delete(
      '/v1/projects/:slug/deploys/hooks/:id',
      { config: { auth: AUTH.sessionOnly }, schema: { tags: ['deploys'], summary: 'Delete a deploy hook; its URL answers 404 from now on', params: HookParams, response: { 204: z.null(), 404: ErrorBodySchema } } },
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
          summary: 'A deploy\'s build log; with Accept: text/event-stream, followed live until the build ends',
          description: `JSON: up to ${LOG_PAGE} lines from \`from\` (seq), with \`nextSeq\` and \`done\`. Server-Sent Events: one \`line\` event per line as the build writes it, then \`end\` with the deploy's final status.`,
          params: DeployParams,
          querystring: z.object({ from: z.coerce.number().int().min(0).default(0) }),
          response: { 200: z.object({ status: z.string(), lines: z.array(LogLineSchema), nextSeq: z.number().int(), done: z.boolean() }), 404: ErrorBodySchema },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const deploy = await getDeploy(db, project.id, request.params.deployId);
        if (!String(request.headers.accept ?? '').includes('text/event-stream')) return logPage(platform.analytics, project.id, deploy.id, deploy.status, request.query.from);
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
          summary: 'The deploy\'s shareable log link (made on first ask; valid 7 days)',
          params: DeployParams,
          response: { 200: z.object({ share: z.object({ token: z.string(), url: z.string(), expiresAt: z.string() }) }), 404: ErrorBodySchema },
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
      { config: { auth: AUTH.project('deploys:write') }, schema: { tags: ['deploys'], summary: 'Revoke the shareable log link; the next ask makes a new one', params: DeployParams, response: { 204: z.null(), 404: ErrorBodySchema } } },
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
          response: { 200: z.object({ deploy: DeploySchema }), 404: ErrorBodySchema, 409: ErrorBodySchema },
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
          response: { 200: z.object({ live: DeploySchema }), 404: ErrorBodySchema, 409: ErrorBodySchema },
        },
      },
      async (request) => ({ live: served(await rollbackTo(db, projectOf(request).id, request.params.deployId)) }),
    );

    app.get(
      '/v1/projects/:slug/deploys/:deployId',
      { config: { auth: AUTH.project('deploys:read') }, schema: { tags: ['deploys'], summary: 'One deploy', params: DeployParams, response: { 200: z.object({ deploy: DeploySchema }), 404: ErrorBodySchema } } },
      async (request) => ({ deploy: served(await getDeploy(db, projectOf(request).id, request.params.deployId)) }),
    );
  };
}

/** https:// through the webhook URL guard (public hosts only); local paths and file:// only when the setting allows. */
async function checkRepoUrl(platform: Platform, raw: string): Promise<string> {
  const local = raw.startsWith('/') || raw.startsWith('file://');
  if (local) {
    if (!platform.config.ALLOW_LOCAL_REPOS) throw new ServiceError('invalid_request', 'repoUrl must be an https:// repository (local paths need ALLOW_LOCAL_REPOS=true)');
    return raw;
  }
  try {
    return (await validateWebhookUrl(raw, { allowLoopback: platform.testing?.allowLoopbackWebhooks === true, resolve: platform.testing?.webhookResolve })).href;
  } catch (err) {
    if (err instanceof WebhookUrlError) throw new ServiceError(err.code, `repoUrl: ${err.message}`);
    throw err;
  }
}

/** A directory inside the checked-out tree. */
function checkRelativeDir(dir: string): string {
  const normal = path.posix.normalize(dir.replace(/\\/g, '/'));
  if (path.posix.isAbsolute(normal) || normal === '..' || normal.startsWith('../')) throw new ServiceError('invalid_request', 'outputDir must be a directory inside the repository');
  return normal;
}
