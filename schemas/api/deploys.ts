import { z } from 'zod';
import { BranchSchema, DEPLOY_FAILURE_REASONS } from '../deploys.ts';
import { DeployGuardSchema } from '../guarded-rollout.ts';
import { DeployGithubSchema } from '../github-status.ts';
import { LIMITS } from '../limits.ts';
import { errorAnswers, NoContent, pageOf, SlugIdParams, SlugParams } from './common.ts';
import { GroupParams } from './errors.ts';
import { routeShapes } from './route-shape.ts';

/** Deploys (spec §4.1 "builds and rollback", §4.4): build settings, deploys, their logs and share links, deploy hooks. */
export const DeployParams = z.object({ slug: z.string(), deployId: z.string().max(64) });

export const DeploySchema = z.object({
  id: z.string().describe('`dep_...`'),
  projectId: z.string(),
  branch: z.string(),
  environment: z.enum(['production', 'preview']),
  status: z.string().describe('queued -> building -> ready | failed | canceled'),
  gitSha: z.string().nullable(),
  trigger: z.object({
    kind: z.string().describe('hook, api, rollback, push or upload (a prebuilt directory)'),
    id: z.string().nullable().describe('the hook id, or the user who asked'),
  }),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  failureReason: z
    .string()
    .nullable()
    .describe(`why a failed deploy failed, one of: ${DEPLOY_FAILURE_REASONS.join(', ')} (build_failed: see exitCode)`),
  exitCode: z.number().int().nullable(),
  framework: z.string().nullable().describe('the framework detected for what the build settings left unset (README, framework defaults)'),
  url: z.string().nullable().describe('where this deploy is served (its own host), once ready'),
  guard: DeployGuardSchema.nullable(),
});
/** A deploy as the API answers with it. */
export type Deploy = z.infer<typeof DeploySchema>;
/** A deploy as it is stored: everything but where it is served, which the API adds (api/deploys/deploys-routes.ts servedAt). */
export type StoredDeploy = Omit<Deploy, 'url'>;
export const DeployAnswer = z.object({
  deploy: DeploySchema,
  github: DeployGithubSchema.nullable()
    .optional()
    .describe('(GET one deploy) for a deploy queued by a GitHub push or pull request: its commit, pull request and the commit status last set'),
});
export type DeployAnswer = z.infer<typeof DeployAnswer>;
export const QueuedDeployAnswer = z.object({ deploy: DeploySchema, deduplicated: z.boolean() });
export type QueuedDeployAnswer = z.infer<typeof QueuedDeployAnswer>;
export const LiveDeployAnswer = z.object({ live: DeploySchema });
export type LiveDeployAnswer = z.infer<typeof LiveDeployAnswer>;
export const QueueDeployBody = z
  .object({
    branch: BranchSchema.optional().describe("defaults to the project's default branch"),
    cache: z.boolean().optional().describe('false: build without restoring the build cache (as `?cache=false`)'),
  })
  .strict()
  .nullish();
/** `POST .../deploys?cache=false`: "redeploy without cache" (issue 42). */
export const QueueDeployQuery = z.object({
  cache: z
    .enum(['true', 'false'])
    .optional()
    .describe('false: the build restores no build cache (its log says "build cache skipped") and saves a fresh one; default true'),
});
/** `POST .../deploys/prebuilt?environment=&branch=&gitSha=` (issue 42): the body is the .tar.gz itself. */
export const PrebuiltDeployQuery = z.object({
  environment: z.enum(['production', 'preview']).optional().describe('default: production for the default branch, preview for any other'),
  branch: BranchSchema.optional().describe("the branch it is recorded under; defaults to the project's default branch"),
  gitSha: z
    .string()
    .regex(/^[0-9a-f]{7,64}$/, 'must be a hex commit sha')
    .optional()
    .describe('the commit it was built from, if the caller knows it'),
});
export const PrebuiltDeployAnswer = z.object({ deploy: DeploySchema });
export type PrebuiltDeployAnswer = z.infer<typeof PrebuiltDeployAnswer>;
export const DeployListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(LIMITS.deploys.listMax).default(LIMITS.deploys.listDefault),
  cursor: z.string().max(512).optional(),
});
export const DeployPage = pageOf(DeploySchema);
export type DeployPage = z.infer<typeof DeployPage>;

/** `GET .../deploys/:deployId/sourcemaps` (issue 37): the maps kept from the deploy's build; never their content. */
export const DeploySourceMapSchema = z.object({
  mapName: z.string().describe("the map's path in the build output (`assets/index-3f9a2c1b.js.map`)"),
  servedPath: z.string().nullable().describe('the path the site serves the mapped file at (`/assets/index-3f9a2c1b.js`), when known'),
  debugId: z.string().nullable().describe('the debug id the bundler wrote into the file and its map, if any'),
  size: z.number().int().describe("the map's bytes"),
});
export type DeploySourceMap = z.infer<typeof DeploySourceMapSchema>;
export const DeploySourceMapList = z.object({ maps: z.array(DeploySourceMapSchema).describe('by map name') });
export type DeploySourceMapList = z.infer<typeof DeploySourceMapList>;

const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');
export const BuildSettingsSchema = z.object({
  repoUrl: z.string().nullable(),
  defaultBranch: z.string().describe('deploys of this branch are production; every other branch is a preview'),
  buildCommand: z.string(),
  outputDir: z.string(),
  spa: z.boolean().describe('a single-page app: every path no file answers serves /index.html (200), unless the output has its own `/*` rule'),
  env: z.array(
    z.object({ name: z.string(), secret: z.boolean(), value: z.string().nullable().describe('null for secrets: write-only'), hint: z.string().nullable() }),
  ),
});
export type BuildSettings = z.infer<typeof BuildSettingsSchema>;
export const BuildSettingsAnswer = z.object({ settings: BuildSettingsSchema });
export type BuildSettingsAnswer = z.infer<typeof BuildSettingsAnswer>;
export const BuildSettingsPatch = z
  .object({
    repoUrl: z
      .string()
      .max(2048)
      .optional()
      .describe('https:// repository (the outbound URL guard applies to its host); local paths and file:// only when ALLOW_LOCAL_REPOS'),
    defaultBranch: BranchSchema.optional(),
    buildCommand: z.string().max(4096).optional().describe('run with `sh -c` in the checked-out tree; empty: no build, the tree is the output'),
    outputDir: z.string().max(1024).optional().describe("relative to the tree; kept as the deploy's artifact and served"),
    spa: z
      .boolean()
      .optional()
      .describe(
        'a single-page app (client-side routing): the next builds serve /index.html for every path no file answers, as `/* /index.html 200` in _redirects',
      ),
    env: z
      .record(EnvNameSchema, z.object({ value: z.string().max(65536), secret: z.boolean().optional() }).nullable())
      .optional()
      .describe('set or replace these variables; null removes one'),
  })
  .strict();
export type BuildSettingsPatch = z.infer<typeof BuildSettingsPatch>;

export const LogLineSchema = z.object({
  seq: z.number().int(),
  at: z.string(),
  stream: z.string().describe("stdout, stderr or system (the builder's own notes)"),
  line: z.string(),
});
export type LogLine = z.infer<typeof LogLineSchema>;
export const LogPageQuery = z.object({ from: z.coerce.number().int().min(0).default(0) });
export const LogPageSchema = z.object({ status: z.string(), lines: z.array(LogLineSchema), nextSeq: z.number().int(), done: z.boolean() });
export type LogPage = z.infer<typeof LogPageSchema>;
export const LogShareAnswer = z.object({ share: z.object({ token: z.string(), url: z.string(), expiresAt: z.string() }) });
export type LogShareAnswer = z.infer<typeof LogShareAnswer>;
/** `GET /v1/deploy-logs/:slug/:deployId?token=`: the share link's own route. */
export const SharedLogParams = z.object({ slug: z.string().max(100), deployId: z.string().max(64) });
export const SharedLogQuery = LogPageQuery.extend({ token: z.string().max(200).optional() });

export const DeployHookSchema = z.object({
  id: z.string().describe('`dhk_...`'),
  name: z.string(),
  branch: z.string(),
  hint: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
});
export type DeployHook = z.infer<typeof DeployHookSchema>;
export const CreateDeployHookBody = z.object({ name: z.string().trim().min(1).max(100), branch: BranchSchema }).strict();
export const CreatedDeployHookAnswer = z.object({
  hook: DeployHookSchema.extend({ token: z.string().describe('`cxhook_...`, shown once'), url: z.string().describe('POST here to queue a deploy') }),
});
export type CreatedDeployHookAnswer = z.infer<typeof CreatedDeployHookAnswer>;
export const DeployHookList = z.object({ hooks: z.array(DeployHookSchema) });
export type DeployHookList = z.infer<typeof DeployHookList>;
/** `POST /v1/hooks/:token`: the hook call itself. */
export const HookCallParams = z.object({ token: z.string().max(200) });
export const HookCallAnswer = z.object({ deployId: z.string(), deduplicated: z.boolean() });
export type HookCallAnswer = z.infer<typeof HookCallAnswer>;

/** A commit a deploy brought (issue 41): read by the builder from its checkout, bounded (builder/commits/read-commits.ts). */
export const DeployCommitSchema = z.object({
  sha: z.string(),
  author: z.string().describe("the author's name (never the e-mail)"),
  committedAt: z.string(),
  subject: z.string().describe("the message's subject, cut to 200 characters"),
  files: z.array(z.string()).describe('repository paths it touched, at most 100'),
  filesCut: z.boolean().describe('it touched more files than kept'),
});
export const DeployCommitList = z.object({
  deployId: z.string(),
  commits: z.array(DeployCommitSchema).describe('newest first, at most 50: since the previous production deploy, or the head commit alone'),
});
export const SuspectCommitsQuery = z.object({
  deploy: z.string().max(64).optional().describe("the deploy whose commits are searched; the issue's first-seen deploy when left out"),
});
export const SuspectCommitsAnswer = z.object({
  deployId: z.string().nullable().describe('the deploy searched; null when the issue names none'),
  file: z.string().nullable().describe("the file of the first in-app frame of the issue's newest sample (its original once a source map resolved it)"),
  commits: z.array(DeployCommitSchema.extend({ matched: z.array(z.string()).describe('its paths that name the file') })),
});
export type SuspectCommitsAnswer = z.infer<typeof SuspectCommitsAnswer>;

const tags = ['deploys'];
const D = LIMITS.deploys;

export const deployRoutes = routeShapes({
  getDeploySettings: {
    tags,
    summary: 'The build source: repository, branch, command, output, variables',
    params: SlugParams,
    response: { 200: BuildSettingsAnswer },
  },
  updateDeploySettings: {
    tags,
    summary: 'Change the build source (console session or CLI)',
    params: SlugParams,
    body: BuildSettingsPatch,
    response: { 200: BuildSettingsAnswer, ...errorAnswers(400) },
  },
  queueDeploy: {
    tags,
    summary: 'Queue a deploy of a branch (production on the default branch, preview otherwise)',
    description:
      'A project without a build source is 409 `source_missing`, and no deploy is made (set one with PATCH .../deploys/settings, or upload a built directory: POST .../deploys/prebuilt). `?cache=false` (or `"cache": false` in the body) builds without restoring the build cache, as "Redeploy without cache": the build log says "build cache skipped", and the build saves a fresh cache when it succeeds; a preview request deduplicated into an already queued deploy marks that deploy so. Deploy hooks take no query parameter and always use the cache (DELETE .../deploys/cache clears it).',
    params: SlugParams,
    querystring: QueueDeployQuery,
    body: QueueDeployBody,
    response: { 202: QueuedDeployAnswer, ...errorAnswers(409) },
  },
  deployPrebuilt: {
    tags,
    summary: 'Deploy a built directory: the body is a .tar.gz of its contents (application/gzip), no build runs',
    description:
      'Streamed, never held whole. Only files and directories: a symbolic or hard link, a device or fifo, an absolute path, a `..` segment or a path over 1,024 characters refuses the whole upload (400 `invalid_artifact` with `reason` and `entry`); past ARTIFACT_MAX_FILES, ARTIFACT_MAX_FILE_BYTES, ARTIFACT_MAX_BYTES, 100 MB compressed, or the quota left, 413 `payload_too_large` with `reason`. A refused upload leaves no deploy and no file. Otherwise the deploy (trigger `upload`) ends as a build does: source maps kept, the site compiled, ready, live when production, `deploy.succeeded`. A production upload while a production deploy is queued or building is 409 `production_deploy_busy`.',
    params: SlugParams,
    querystring: PrebuiltDeployQuery,
    consumes: ['application/gzip'],
    response: { 201: PrebuiltDeployAnswer, ...errorAnswers(400, 404, 409, 413, 415) },
  },
  listDeploys: { tags, summary: 'Deploys, newest first', params: SlugParams, querystring: DeployListQuery, response: { 200: DeployPage } },
  createDeployHook: {
    tags,
    summary: 'Create a deploy hook bound to a branch; the token and URL are in this response only',
    params: SlugParams,
    body: CreateDeployHookBody,
    response: { 201: CreatedDeployHookAnswer },
  },
  listDeployHooks: { tags, summary: 'List deploy hooks (hints, never tokens)', params: SlugParams, response: { 200: DeployHookList } },
  deleteDeployHook: {
    tags,
    summary: 'Delete a deploy hook; its URL answers 404 from now on',
    params: SlugIdParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  clearBuildCache: {
    tags,
    summary: "Clear the project's build cache: every branch's node_modules and package-manager caches; the next build starts cold",
    params: SlugParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  getDeployLogs: {
    tags,
    summary: "A deploy's build log; with Accept: text/event-stream, followed live until the build ends",
    description: `JSON: up to ${D.logPageLines} lines from \`from\` (seq), with \`nextSeq\` and \`done\`. Server-Sent Events: one \`line\` event per line as the build writes it, then \`end\` with the deploy's final status.`,
    params: DeployParams,
    querystring: LogPageQuery,
    response: { 200: LogPageSchema, ...errorAnswers(404) },
  },
  getDeployLogShare: {
    tags,
    summary: "The deploy's shareable log link (made on first ask; valid 7 days)",
    params: DeployParams,
    response: { 200: LogShareAnswer, ...errorAnswers(404) },
  },
  revokeDeployLogShare: {
    tags,
    summary: 'Revoke the shareable log link; the next ask makes a new one',
    params: DeployParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  cancelDeploy: {
    tags,
    summary: 'Cancel a queued deploy now, or stop a building one (its builder kills the build within seconds)',
    params: DeployParams,
    response: { 200: DeployAnswer, ...errorAnswers(404, 409) },
  },
  rollbackDeploy: {
    tags,
    summary: 'Serve an earlier ready production deploy again, without rebuilding',
    params: DeployParams,
    response: { 200: LiveDeployAnswer, ...errorAnswers(404, 409) },
  },
  listDeploySourceMaps: {
    tags,
    summary: "The source maps kept from the deploy's build (names, served paths, debug ids, sizes; never content)",
    description:
      'The processor resolves minified stack frames through these (issue 37). They are kept privately: a site serves a `.map` only when the project opts in.',
    params: DeployParams,
    response: { 200: DeploySourceMapList, ...errorAnswers(404) },
  },
  listDeployCommits: {
    tags,
    summary: 'The commits the deploy brought since the previous production deploy (sha, author name, subject, files)',
    params: DeployParams,
    response: { 200: DeployCommitList, ...errorAnswers(404) },
  },
  getIssueSuspectCommits: {
    tags,
    summary: "Suspect commits: the commits of the issue's deploy that touched the file of its first in-app frame",
    description:
      "The deploy is the issue's first-seen deploy unless `deploy` names another of the project's. A frame's file (a checkout path, a URL's path, a source map's original source) matches a commit's path when one ends with the other on whole path segments.",
    params: GroupParams,
    querystring: SuspectCommitsQuery,
    response: { 200: SuspectCommitsAnswer, ...errorAnswers(400, 404) },
  },
  getDeploy: { tags, summary: 'One deploy', params: DeployParams, response: { 200: DeployAnswer, ...errorAnswers(404) } },
  triggerDeployHook: {
    tags,
    summary: "Deploy hook: queue a deploy of the hook's branch",
    description:
      `The token alone authorizes. With \`X-Hub-Signature-256: sha256=<hex>\` or \`X-Service-Signature\`, the HMAC-SHA256 of the raw body keyed with the token must match (401 invalid_signature). ` +
      `Production on the project's default branch, preview otherwise; a production deploy while one is queued or building is 409 production_deploy_busy with activeDeployId. ` +
      `Limited to ${D.hookCallsPerTokenPerMinute} calls per token and ${D.hookCallsPerIpPerMinute} per caller IP per minute (429 with Retry-After); bodies up to ${D.hookBodyBytes} bytes (413). ` +
      // Callers post to the URL as given (code hosts, CMS webhooks, CI); a parameter is a person's idea of an option
      // another host's hooks have, and ignoring it would let them believe it took effect.
      "Takes no query parameters: the hook always deploys its own branch the same way, so one copied from another host's hooks (`?buildCache=false`, `?trigger_branch=`) is refused with 400 invalid_request rather than silently ignored.",
    params: HookCallParams,
    response: { 202: HookCallAnswer, ...errorAnswers(401, 404, 409, 429) },
  },
  getSharedDeployLog: {
    tags,
    summary: 'Shareable deploy log (the token query parameter is the credential)',
    params: SharedLogParams,
    querystring: SharedLogQuery,
    response: { 200: LogPageSchema, ...errorAnswers(404, 429) },
  },
});
