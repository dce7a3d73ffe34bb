import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { errorAnswers, NoContent } from '../../schemas/api/common.ts';
import { ConnectGithubBody, ConnectionIdParams, GithubConnectionAnswer, GithubConnectionList } from '../../schemas/api/integrations.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { githubConnections } from './github-repository.ts';

/**
 * `/v1/integrations/github` (spec §4.1): connect a GitHub repository to a project (a console session or a CLI token of a
 * member). A push to a connected repository then queues a deploy of that project (processor/inbound/), received at
 * `POST /v1/webhooks/code_host`. One repository may feed several projects. A project without a build source gets the
 * connection's clone URL as its source (checked by the outbound URL guard).
 */
export function githubIntegrationRoutes(platform: Pick<Platform, 'db' | 'clock' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.post(
      '/v1/integrations/github',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['integrations'],
          summary: 'Connect a GitHub repository to a project',
          body: ConnectGithubBody,
          response: { 201: GithubConnectionAnswer, ...errorAnswers(400, 404, 409) },
        },
      },
      async (request, reply) => {
        const userId = userIdOf(request);
        const project = await githubConnections.memberProject(db, userId, request.body.project);
        const cloneUrl = request.body.cloneUrl ?? `https://github.com/${request.body.repository}.git`;
        await checkedUrl(platform, cloneUrl, 'repository', 'cloneUrl');
        const connection = await githubConnections.connect(db, {
          projectId: project.id,
          repository: request.body.repository,
          cloneUrl,
          userId,
          now: clock.now(),
        });
        // The project builds from the repository when it has no source yet.
        await db.query(`INSERT INTO project_build_settings (project_id, repo_url, updated_at) VALUES ($1, $2, $3) ON CONFLICT (project_id) DO NOTHING`, [
          project.id,
          cloneUrl,
          new Date(clock.now()),
        ]);
        return reply.code(201).send({ connection });
      },
    );

    app.get(
      '/v1/integrations/github',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['integrations'], summary: "The repositories connected to the user's projects", response: { 200: GithubConnectionList } },
      },
      async (request) => ({ connections: await githubConnections.listForUser(db, userIdOf(request)) }),
    );

    app.delete(
      '/v1/integrations/github/:id',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['integrations'],
          summary: 'Disconnect a repository; its pushes queue nothing from now on',
          params: ConnectionIdParams,
          response: { 204: NoContent, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        await githubConnections.disconnect(db, userIdOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
