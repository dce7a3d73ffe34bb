import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { alertRecipients } from '../../domain/alert-recipients.ts';
import { publishIssueEvents } from '../../domain/issue-events/issue-events.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { errorsRepository } from './errors-repository.ts';
import { issueMergesRepository } from './issue-merges-repository.ts';
import { declared } from '../declared-route.ts';
import { type BulkIssuesAnswer, IGNORE_MINUTES_MAX, type IgnoreIssueBody, type IssueStatus, parseIssueQuery } from '../../schemas/api/errors.ts';
import type { IgnoreCondition } from './errors-repository.ts';

/**
 * Error tracking API (spec §4.5): the issue inbox and its transitions (§3.1), error settings
 * (§2.7) and alert settings (§2.8, §7.6). Reads need `errors:read`, changes `errors:write` (or a
 * session / CLI token that reaches the project); the shapes are schemas/api/errors.ts.
 */
const read = { auth: AUTH.project('errors:read') };
const write = { auth: AUTH.project('errors:write') };

export function errorRoutes(platform: Pick<Platform, 'db' | 'analytics' | 'clock' | 'mailer' | 'config' | 'logger' | 'bus'>): FastifyPluginAsyncZod {
  const { db, analytics, clock, mailer, config, logger } = platform;
  return async (app) => {
    app.route({
      ...declared('listIssues'),
      config: read,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        // `key:value` terms filter by tag through the occurrences (issue 40); the rest is the text search. The shape
        // refused a query that does not parse.
        const parsed = parseIssueQuery(request.query.query ?? '');
        if (!parsed.ok) throw new ServiceError('invalid_request', parsed.message);
        let groupIds = parsed.tags.length ? await errorsRepository.groupIdsWithTags(analytics, projectId, parsed.tags) : undefined;
        // Occurrences keep the id of an issue later merged (issue 41): its target matches through them.
        if (groupIds?.length) groupIds = [...groupIds, ...(await issueMergesRepository.targetsOf(db, projectId, groupIds))];
        return errorsRepository.listIssues(db, projectId, { ...request.query, query: parsed.text }, groupIds);
      },
    });
    app.route({ ...declared('getErrorSettings'), config: read, handler: async (request) => errorsRepository.getErrorSettings(db, projectOf(request).id) });
    app.route({
      ...declared('updateErrorSettings'),
      config: write,
      handler: async (request) => errorsRepository.updateErrorSettings(db, projectOf(request).id, request.body, clock.now()),
    });
    app.route({
      ...declared('getIssue'),
      config: read,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        // A merged issue's id answers the issue it was merged into (issue 41), as Sentry redirects to the primary.
        const asked = request.params.groupId;
        const target = await issueMergesRepository.redirectOf(db, projectId, asked);
        const issue = await errorsRepository.getIssue(db, projectId, target ?? asked);
        return { issue: target ? { ...issue, redirectedFrom: asked } : issue };
      },
    });
    app.route({
      ...declared('mergeIssues'),
      config: write,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        await issueMergesRepository.merge(db, projectId, request.params.groupId, request.body.groupIds, clock.now());
        return { issue: await errorsRepository.getIssue(db, projectId, request.params.groupId) };
      },
    });
    app.route({
      ...declared('getIssueTags'),
      config: read,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        const groupId = (await issueMergesRepository.redirectOf(db, projectId, request.params.groupId)) ?? request.params.groupId;
        if (!(await errorsRepository.issueExists(db, projectId, groupId))) throw new ServiceError('not_found', 'no such issue in this project');
        // Its occurrences and those of the issues merged into it, stored under their own ids (issue 41).
        return errorsRepository.issueTagFacets(
          analytics,
          projectId,
          await issueMergesRepository.occurrenceGroupIds(db, projectId, groupId),
          request.query.values,
        );
      },
    });
    for (const [id, action] of [
      ['resolveIssue', 'resolve'],
      ['ignoreIssue', 'ignore'],
      ['reopenIssue', 'reopen'],
    ] as const) {
      app.route({
        ...declared(id),
        config: write,
        handler: async (request) => {
          const projectId = projectOf(request).id;
          // Resolve in next deploy (issue 41): `{ "inNextDeploy": true }` on the resolve route.
          const body = request.body as { inNextDeploy?: boolean } | undefined;
          if (action === 'resolve' && body?.inNextDeploy) return { issue: await errorsRepository.resolveInNextDeploy(db, projectId, request.params.groupId) };
          // Ignore until (issue 41): Sentry's statusDetails conditions; no body ignores forever.
          if (action === 'ignore') {
            const until = ignoreCondition(request.body as IgnoreIssueBody, clock.now());
            return { issue: await errorsRepository.ignoreIssue(db, projectId, request.params.groupId, until, clock.now()) };
          }
          const issue = await errorsRepository.transitionIssue(db, projectId, request.params.groupId, action);
          if (action === 'resolve') await resolvedEvents(projectId, [request.params.groupId]);
          return { issue };
        },
      });
    }
    /** issue.resolved (issue 41) for the issues a request resolved; the resolve stands when the bus is down (logged). */
    const resolvedEvents = (projectId: string, groupIds: string[]) =>
      publishIssueEvents(
        platform,
        publicBaseUrl(config),
        projectId,
        groupIds.map((groupId) => ({ groupId, event: 'issue.resolved' as const, environment: null })),
      ).catch((err) => logger.error({ err, projectId }, 'issue.resolved could not be published'));
    app.route({
      ...declared('listDeployIssues'),
      config: read,
      handler: async (request) => errorsRepository.deployIssues(db, projectOf(request).id, request.params.deployId),
    });
    app.route({
      ...declared('bulkIssues'),
      config: write,
      handler: async (request) => {
        // Resolve in next deploy (issue 41): each issue as its own route moves it.
        if (request.body.inNextDeploy) return resolveInNextDeployEach(projectOf(request).id, request.body.groupIds);
        const out = await errorsRepository.transitionIssues(db, projectOf(request).id, request.body.groupIds, request.body.action);
        if (request.body.action === 'resolve')
          await resolvedEvents(
            projectOf(request).id,
            out.updated.map((i) => i.id),
          );
        return out;
      },
    });
    const resolveInNextDeployEach = async (projectId: string, groupIds: string[]): Promise<BulkIssuesAnswer> => {
      const out: BulkIssuesAnswer = { updated: [], skipped: [] };
      for (const groupId of new Set(groupIds)) {
        try {
          out.updated.push(await errorsRepository.resolveInNextDeploy(db, projectId, groupId));
        } catch (err) {
          if (!(err instanceof ServiceError) || (err.code !== 'not_found' && err.code !== 'invalid_transition')) throw err;
          const status = (err.extra.body?.status as IssueStatus | undefined) ?? null;
          out.skipped.push({ groupId, error: err.code, message: err.message, status });
        }
      }
      return out;
    };
    app.route({ ...declared('getErrorAlerts'), config: read, handler: async (request) => errorsRepository.getAlertSettings(db, projectOf(request).id) });
    app.route({
      ...declared('updateErrorAlerts'),
      config: write,
      handler: async (request) => errorsRepository.updateAlertSettings(db, projectOf(request).id, request.body, clock.now()),
    });
    app.route({
      ...declared('testErrorAlert'),
      config: write,
      handler: async (request, reply) => {
        const project = projectOf(request);
        const now = clock.now();
        const claim = await errorsRepository.claimTestAlert(db, project.id, now, LIMITS.errorAlert.testPerProjectMs);
        if (!claim.ok) throw new ServiceError('rate_limited', 'one test alert per 15 minutes', { retryAfterSec: claim.retryAfterSec });
        const to = await alertRecipients(db, project.id);
        if (!to.length) {
          await errorsRepository.releaseTestAlert(db, project.id, now, claim.previous);
          throw new ServiceError('conflict', 'every alert recipient bounced or complained: re-enable one in error-alert settings first');
        }
        const base = publicBaseUrl(config);
        try {
          await mailer.send({
            to,
            subject: `[${project.name}] Test error alert`,
            text: [
              `This is a test alert for project ${project.name} (${project.slug}).`,
              'Real alerts are sent for new production issues and production regressions, at most one per issue every 6 hours.',
              '',
              `Issues: ${base}/projects/${encodeURIComponent(project.slug)}/errors`,
            ].join('\n'),
          });
        } catch (err) {
          logger.error({ err, projectId: project.id }, 'test alert mail failed');
          await errorsRepository.releaseTestAlert(db, project.id, now, claim.previous);
          throw new ServiceError('unavailable', 'the mail server did not take the message; try again', { retryAfterSec: 30 });
        }
        return reply.code(202).send({ sent: true as const, to });
      },
    });
  };
}

/** The ignore body as a condition; a time must be ahead of now and at most a year ahead (400 naming the field). */
function ignoreCondition(body: IgnoreIssueBody, now: number): IgnoreCondition {
  if (!body) return null;
  if (body.ignoreCount !== undefined) return { count: body.ignoreCount };
  if (body.ignoreUserCount !== undefined) return { userCount: body.ignoreUserCount };
  if (body.ignoreUntilEscalating) return { escalating: true };
  if (body.ignoreDuration !== undefined) return { untilMs: now + body.ignoreDuration * 60_000 };
  if (body.ignoreUntil === undefined) return null;
  const at = Date.parse(body.ignoreUntil);
  if (!(at > now && at <= now + IGNORE_MINUTES_MAX * 60_000))
    throw new ServiceError('invalid_request', 'ignoreUntil must be in the future and at most a year ahead', {
      fields: [{ path: 'body.ignoreUntil', message: 'must be in the future and at most a year ahead' }],
    });
  return { untilMs: at };
}
