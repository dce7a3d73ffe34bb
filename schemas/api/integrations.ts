import { z } from 'zod';
import { GithubSettingsPatch, GithubSettingsSchema } from '../github-status.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** `/v1/integrations/github` (spec §4.1): GitHub repositories connected to projects; their pushes queue deploys. */
export const GITHUB_REPO = /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/;

export const GithubConnectionSchema = z.object({
  id: z.string().describe('`ghc_...`'),
  project: z.string().describe('the project slug'),
  repository: z.string().describe('owner/name, as GitHub named it when last seen'),
  repositoryId: z.number().int().nullable().describe("GitHub's repository id: pushes match it, never the name"),
  installationId: z.number().int().nullable().describe('the GitHub App installation the repository was proven through'),
  status: z
    .enum(['active', 'needs_reconnecting'])
    .describe(
      'needs_reconnecting: connected by name before connections were proven through the GitHub App; its pushes deploy nothing until it is connected again',
    ),
  cloneUrl: z.string(),
  createdAt: z.string(),
});
export type GithubConnection = z.infer<typeof GithubConnectionSchema>;

export const ConnectGithubBody = z
  .object({
    project: z.string().min(1).max(100).describe('the slug of a project you are a member of'),
    repository: z
      .string()
      .regex(GITHUB_REPO, 'owner/name')
      .describe('the repository to connect; your GitHub account must reach it through an installation of the app'),
  })
  .strict();
export type ConnectGithubBody = z.infer<typeof ConnectGithubBody>;
/** The start of a connection: nothing is bound until GitHub sends the user back with proof (the callback). */
export const GithubConnectStartAnswer = z.object({
  authorizeUrl: z
    .string()
    .describe('open in the browser where you are signed in to the console: GitHub asks you to authorize the app, then returns to the callback'),
  installUrl: z
    .string()
    .nullable()
    .describe("where the app is installed on the repository's account first, when it is not yet (null when GITHUB_APP_SLUG is unset)"),
  expiresAt: z.string().describe('the links work once, until then'),
});
export type GithubConnectStartAnswer = z.infer<typeof GithubConnectStartAnswer>;
/**
 * GitHub's return to `/v1/integrations/github/callback` (after authorizing, or installing with user authorization).
 * The route reads state, code and error; GitHub adds parameters of its own that vary with the flow (installation_id and
 * setup_action after an install, error_description and error_uri with an error), so the rest pass through unread
 * rather than strand the person on a refusal halfway through connecting.
 */
export const GithubCallbackQuery = z
  .object({
    state: z.string().max(200),
    code: z.string().max(200).optional(),
    installation_id: z.string().max(30).optional(),
    setup_action: z.string().max(30).optional(),
    error: z.string().max(200).optional(),
  })
  .passthrough();
/** What a callback did, in the console page's `?github=` it redirects to. */
export const GITHUB_CONNECT_OUTCOMES = ['connected', 'already_connected', 'cancelled', 'code_refused', 'not_installed', 'github_failed'] as const;
export type GithubConnectOutcome = (typeof GITHUB_CONNECT_OUTCOMES)[number];
export const GithubConnectionList = z.object({ connections: z.array(GithubConnectionSchema) });
export type GithubConnectionList = z.infer<typeof GithubConnectionList>;
export const ConnectionIdParams = z.object({ id: z.string().max(64) });

const tags = ['integrations'];

export const integrationRoutes = routeShapes({
  connectGithub: {
    tags,
    summary: "Start connecting a GitHub repository to a project: GitHub's authorize link, to open in the browser",
    body: ConnectGithubBody,
    response: { 202: GithubConnectStartAnswer, ...errorAnswers(400, 404, 503) },
  },
  githubCallback: {
    tags,
    summary: "GitHub's return after authorizing (or installing) the app: binds the repository, then redirects to the project's Integrations page",
    querystring: GithubCallbackQuery,
    response: { ...errorAnswers(400, 403, 503) },
  },
  listGithubRepositories: { tags, summary: "The repositories connected to the user's projects", response: { 200: GithubConnectionList } },
  disconnectGithub: {
    tags,
    summary: 'Disconnect a repository; its pushes queue nothing from now on',
    params: ConnectionIdParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  getGithubSettings: {
    tags,
    summary: "The project's GitHub settings: whether a preview that brings new errors fails its commit status",
    params: SlugParams,
    response: { 200: GithubSettingsSchema, ...errorAnswers(404) },
  },
  updateGithubSettings: {
    tags,
    summary: "Change the project's GitHub settings (the fields given); applies from the next look at a deploy",
    params: SlugParams,
    body: GithubSettingsPatch,
    response: { 200: GithubSettingsSchema, ...errorAnswers(400, 404) },
  },
});
