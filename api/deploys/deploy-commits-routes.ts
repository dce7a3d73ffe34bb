import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { deployCommitsRepository } from '../../domain/deploys/deploy-commits-repository.ts';
import { culpritFile, firstInAppFile, suspectCommits } from '../../domain/deploys/suspect-commits.ts';
import { errorsRepository } from '../errors/errors-repository.ts';
import { declared } from '../declared-route.ts';
import { deploysRepository as deploys } from './deploys-repository.ts';

/**
 * Suspect commits (issue 41): a deploy's commits as its build recorded them (builder/commits/), and an issue's suspects:
 *   1. the issue   its newest sample's first in-app frame (the original file once a source map resolved it; its culprit
 *                  when no sample has symbolicated frames) and its first-seen deploy, or the project's deploy the
 *                  `deploy` query names
 *   2. the deploy  its recorded commits
 *   3. the rule    those that touched the frame's file (domain/deploys/suspect-commits.ts)
 */
export function deployCommitsRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    app.route({
      ...declared('listDeployCommits'),
      config: { auth: AUTH.project('deploys:read') },
      handler: async (request) => {
        const deploy = await deploys.get(db, projectOf(request).id, request.params.deployId);
        return { deployId: deploy.id, commits: await deployCommitsRepository.list(db, deploy.id) };
      },
    });

    app.route({
      ...declared('getIssueSuspectCommits'),
      config: { auth: AUTH.project('errors:read') },
      handler: async (request) => {
        const projectId = projectOf(request).id;
        // 1. the issue
        const issue = await errorsRepository.getIssue(db, projectId, request.params.groupId);
        const file = firstInAppFile(issue.frames) ?? culpritFile(issue.culprit) ?? null;
        const deployId = request.query.deploy ? (await deploys.get(db, projectId, request.query.deploy)).id : (issue.firstSeenDeploy?.id ?? null);
        if (!deployId || !file) return { deployId, file, commits: [] };
        // 2. the deploy, 3. the rule
        return { deployId, file, commits: suspectCommits(await deployCommitsRepository.list(db, deployId), file) };
      },
    });
  };
}
