import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { alertRecipients } from '../../domain/alert-recipients.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import {
  claimTestAlert,
  getAlertSettings,
  getErrorSettings,
  getIssue,
  listIssues,
  releaseTestAlert,
  transitionIssue,
  transitionIssues,
  updateAlertSettings,
  updateErrorSettings,
} from './errors-repository.ts';
import { errorAnswers, SlugParams } from '../../schemas/api/common.ts';
import {
  AlertSettingsPatch,
  AlertSettingsSchema,
  BulkIssuesAnswer,
  BulkIssuesBody,
  ErrorSettingsPatch,
  ErrorSettingsSchema,
  GroupParams,
  IssueAnswer,
  IssueListQuery,
  IssuePage,
  TestAlertAnswer,
} from '../../schemas/api/errors.ts';

/**
 * Error tracking API (spec §4.5): the issue inbox and its transitions (§3.1), error settings
 * (§2.7) and alert settings (§2.8, §7.6). Reads need `errors:read`, changes `errors:write` (or a
 * session / CLI token that reaches the project). The static `errors/settings` path is registered
 * beside `errors/:groupId`; Fastify's router prefers the static segment, so it is never read as a
 * group id.
 */
const Errors = errorAnswers(400, 404);

export function errorRoutes(platform: Pick<Platform, 'db' | 'clock' | 'mailer' | 'config' | 'logger'>): FastifyPluginAsyncZod {
  const { db, clock, mailer, config, logger } = platform;
  return async (app) => {
    app.get(
      '/v1/projects/:slug/errors',
      {
        config: { auth: AUTH.project('errors:read') },
        schema: {
          tags: ['errors'],
          summary: 'List issues, most occurrences first (default status unresolved); paginated with cursor',
          description:
            'Filter by `status`, `environment` (issues with occurrences there) and `query`; order by `sort` (count or lastSeen). The cursor belongs to the sort it came from.',
          params: SlugParams,
          querystring: IssueListQuery,
          response: { 200: IssuePage, ...Errors },
        },
      },
      async (request) => listIssues(db, projectOf(request).id, request.query),
    );

    app.get(
      '/v1/projects/:slug/errors/settings',
      {
        config: { auth: AUTH.project('errors:read') },
        schema: { tags: ['errors'], summary: 'Error settings', params: SlugParams, response: { 200: ErrorSettingsSchema, ...Errors } },
      },
      async (request) => getErrorSettings(db, projectOf(request).id),
    );

    app.patch(
      '/v1/projects/:slug/errors/settings',
      {
        config: { auth: AUTH.project('errors:write') },
        schema: {
          tags: ['errors'],
          summary: 'Change paused and/or ingestOrigins',
          params: SlugParams,
          body: ErrorSettingsPatch,
          response: { 200: ErrorSettingsSchema, ...Errors },
        },
      },
      async (request) => updateErrorSettings(db, projectOf(request).id, request.body, clock.now()),
    );

    app.get(
      '/v1/projects/:slug/errors/:groupId',
      {
        config: { auth: AUTH.project('errors:read') },
        schema: {
          tags: ['errors'],
          summary: 'One issue with stack, recent samples, suggestion and per-environment counts',
          params: GroupParams,
          response: { 200: IssueAnswer, ...Errors },
        },
      },
      async (request) => ({ issue: await getIssue(db, projectOf(request).id, request.params.groupId) }),
    );

    for (const action of ['resolve', 'ignore', 'reopen'] as const) {
      app.post(
        `/v1/projects/:slug/errors/:groupId/${action}`,
        {
          config: { auth: AUTH.project('errors:write') },
          schema: {
            tags: ['errors'],
            summary: {
              resolve: 'Resolve an unresolved issue',
              ignore: 'Ignore an unresolved issue (no more alert email)',
              reopen: 'Reopen a resolved or ignored issue',
            }[action],
            params: GroupParams,
            response: { 200: IssueAnswer, ...errorAnswers(409), ...Errors },
          },
        },
        async (request) => ({ issue: await transitionIssue(db, projectOf(request).id, request.params.groupId, action) }),
      );
    }

    app.post(
      '/v1/projects/:slug/errors/bulk',
      {
        config: { auth: AUTH.project('errors:write') },
        schema: {
          tags: ['errors'],
          summary: 'Resolve, ignore or reopen up to 100 issues at once',
          description:
            'Each issue moves as its single-issue route would (§3.1). Issues not in a state the action leaves from, or not found, are listed in `skipped` with the reason; the others are in `updated`.',
          params: SlugParams,
          body: BulkIssuesBody,
          response: {
            200: BulkIssuesAnswer,
            ...Errors,
          },
        },
      },
      async (request) => transitionIssues(db, projectOf(request).id, request.body.groupIds, request.body.action),
    );

    app.get(
      '/v1/projects/:slug/error-alerts',
      {
        config: { auth: AUTH.project('errors:read') },
        schema: { tags: ['errors'], summary: 'Alert email settings', params: SlugParams, response: { 200: AlertSettingsSchema, ...Errors } },
      },
      async (request) => getAlertSettings(db, projectOf(request).id),
    );

    app.patch(
      '/v1/projects/:slug/error-alerts',
      {
        config: { auth: AUTH.project('errors:write') },
        schema: {
          tags: ['errors'],
          summary: 'Toggle alert email and/or replace the recipient list',
          params: SlugParams,
          body: AlertSettingsPatch,
          response: { 200: AlertSettingsSchema, ...Errors },
        },
      },
      async (request) => updateAlertSettings(db, projectOf(request).id, request.body, clock.now()),
    );

    app.post(
      '/v1/projects/:slug/error-alerts/test',
      {
        config: { auth: AUTH.project('errors:write') },
        schema: {
          tags: ['errors'],
          summary: 'Send a real test alert email; at most one per 15 minutes per project (429 rate_limited with Retry-After)',
          params: SlugParams,
          response: { 202: TestAlertAnswer, ...errorAnswers(409, 429, 503), ...Errors },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const now = clock.now();
        const claim = await claimTestAlert(db, project.id, now, LIMITS.errorAlert.testPerProjectMs);
        if (!claim.ok) throw new ServiceError('rate_limited', 'one test alert per 15 minutes', { retryAfterSec: claim.retryAfterSec });
        const to = await alertRecipients(db, project.id);
        if (!to.length) {
          await releaseTestAlert(db, project.id, now, claim.previous);
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
          await releaseTestAlert(db, project.id, now, claim.previous);
          throw new ServiceError('unavailable', 'the mail server did not take the message; try again', { retryAfterSec: 30 });
        }
        return reply.code(202).send({ sent: true as const, to });
      },
    );
  };
}
