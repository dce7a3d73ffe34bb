import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import { GithubAppError, githubAppFromConfig, type GithubApp } from '../../platform/github-app.ts';
import type { Platform } from '../../platform/platform.ts';
import { routePath } from '../../schemas/api/client.ts';
import type { GithubConnectOutcome } from '../../schemas/api/integrations.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { deploysRepository } from '../deploys/deploys-repository.ts';
import { githubConnectionsRepository as connections } from './github-repository.ts';

/**
 * `/v1/integrations/github` (spec §4.1; issue 38): a GitHub repository is connected to a project only on GitHub's word
 * that the signed-in user reaches it through an installation of the service's GitHub App:
 *   1. start     POST with the project and owner/name: a single-use state (ten minutes) and GitHub's authorize link
 *                (and the app's install link); nothing is bound yet
 *   2. callback  GitHub returns the user's browser with a code and the state. The console session must be the user
 *                who started (so a link sent to someone else binds nothing of theirs to a stranger's project); the
 *                code becomes a user-to-server token (used here, never stored), whose `/user/installations` and
 *                their repositories must hold owner/name; the binding keeps GitHub's repository id and installation
 *                id, which push matching uses (processor/inbound/), never the name
 *   3. the browser is sent back to the project's Integrations page with `?github=<outcome>`
 * One repository may feed several projects, each bound by its own proof. A project without a build source gets the
 * repository as its source. Installation events (app uninstalled, repository removed from it) unbind.
 */
const STATE_TTL_MS = 10 * 60_000;

export function githubIntegrationRoutes(
  platform: Pick<Platform, 'db' | 'clock' | 'outbound' | 'config' | 'logger'>,
  opts: { app?: GithubApp } = {},
): FastifyPluginAsyncZod {
  const { db, clock, config } = platform;
  const log = platform.logger.child({ component: 'github-integration' });
  const github = opts.app ?? githubAppFromConfig(config, platform.outbound);
  const redirectUri = `${publicBaseUrl(config)}${routePath('githubCallback')}`;
  const appOrRefuse = (): GithubApp => {
    if (!github)
      throw new ServiceError(
        'github_app_not_configured',
        'no GitHub App is configured (GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_CLIENT_ID, GITHUB_APP_CLIENT_SECRET): repositories cannot be connected',
      );
    return github;
  };

  return async (app) => {
    app.route({
      ...declared('connectGithub'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const gh = appOrRefuse();
        const userId = userIdOf(request);
        const project = await connections.memberProject(db, userId, request.body.project);
        const state = randomBytes(24).toString('base64url');
        const now = clock.now();
        await connections.startConnect(db, { state, userId, projectId: project.id, repository: request.body.repository, now, ttlMs: STATE_TTL_MS });
        return reply.code(202).send({
          authorizeUrl: gh.authorizeUrl(state, redirectUri),
          installUrl: gh.installUrl(state) ?? null,
          expiresAt: new Date(now + STATE_TTL_MS).toISOString(),
        });
      },
    });

    app.route({
      ...declared('githubCallback'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const gh = appOrRefuse();
        const userId = userIdOf(request);
        const now = clock.now();
        const pending = await connections.pendingConnect(db, request.query.state, now);
        if (!pending)
          throw new ServiceError('invalid_request', "this connection link is unknown, used or expired: start again from the project's Integrations page");
        if (pending.userId !== userId)
          throw new ServiceError('forbidden', 'this connection was started by another user: start it again while signed in as yourself');
        if (!(await connections.useConnect(db, request.query.state))) throw new ServiceError('invalid_request', 'this connection link was already used');
        const back = (outcome: GithubConnectOutcome) => reply.redirect(`/projects/${encodeURIComponent(pending.slug)}/integrations?github=${outcome}`, 303);
        const { code, error } = request.query;
        if (error || !code) return back('cancelled');
        // Still a member now, not only when it started.
        const project = await connections.memberProject(db, userId, pending.slug);
        let found: Awaited<ReturnType<GithubApp['userRepository']>>;
        try {
          const token = await gh.userToken(code, redirectUri);
          found = await gh.userRepository(token, pending.repository);
        } catch (err) {
          if (!(err instanceof GithubAppError)) throw err;
          log.warn({ reason: err.reason, message: err.message }, 'GitHub connection refused');
          return back(err.reason);
        }
        if (!found) return back('not_installed');
        const connection = await connections.connect(db, {
          projectId: project.id,
          repositoryId: found.repository.id,
          installationId: found.installationId,
          fullName: found.repository.fullName,
          cloneUrl: found.repository.cloneUrl,
          userId,
          now,
        });
        if (!connection) return back('already_connected');
        // The project builds from the repository when it has no source yet.
        await deploysRepository.sourceIfUnset(db, project.id, found.repository.cloneUrl, now);
        log.info({ project: project.slug, repositoryId: found.repository.id, installationId: found.installationId }, 'GitHub repository connected');
        return back('connected');
      },
    });

    app.route({
      ...declared('listGithubRepositories'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ connections: await connections.listForUser(db, userIdOf(request)) }),
    });

    app.route({
      ...declared('disconnectGithub'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        await connections.disconnect(db, userIdOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    });

    // The project's GitHub settings (issue 41, processor/github-status/): read by its readers, changed by its members.
    app.route({
      ...declared('getGithubSettings'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => connections.settings(db, projectOf(request).id),
    });
    app.route({
      ...declared('updateGithubSettings'),
      config: { auth: AUTH.user },
      handler: async (request) => connections.updateSettings(db, projectOf(request).id, request.body),
    });
  };
}
