import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ServiceError } from '../../schemas/error-codes.ts';
import { ENVIRONMENTS } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { hostPatternSchema } from '../../schemas/host-pattern.ts';
import { alertRecipients } from '../../platform/alert-recipients.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
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

/**
 * Error tracking API (spec §4.5): the issue inbox and its transitions (§3.1), error settings
 * (§2.7) and alert settings (§2.8, §7.6). Reads need `errors:read`, changes `errors:write` (or a
 * session / CLI token that reaches the project). The static `errors/settings` path is registered
 * beside `errors/:groupId`; Fastify's router prefers the static segment, so it is never read as a
 * group id.
 */
const StatusSchema = z.enum(['unresolved', 'resolved', 'ignored']);
const EnvironmentSchema = z.enum(ENVIRONMENTS);
const Params = z.object({ slug: z.string() });
const GroupParams = z.object({ slug: z.string(), groupId: z.string().max(64) });

export const IssueSummarySchema = z.object({
  groupId: z.string().describe('the issue\'s id (§2.6), `grp_...`: what the `:groupId` routes take'),
  id: z.string().describe('the same as groupId'),
  name: z.string(),
  message: z.string().describe('the latest occurrence\'s message (scrubbed)'),
  status: StatusSchema,
  count: z.number().int(),
  envCounts: z.record(z.string(), z.number().int()).describe('occurrences per environment'),
  firstSeen: z.string(),
  lastSeen: z.string(),
  regressionCount: z.number().int(),
  culprit: z.string().nullable().describe('first in-app stack frame'),
  suggestion: z.string().nullable().describe('first thing to check: a hint, not a diagnosis'),
});

export const IssueSchema = IssueSummarySchema.extend({
  fingerprint: z.string(),
  stack: z.string(),
  samples: z.array(z.record(z.string(), z.unknown())).describe('the 20 most recent occurrences, newest first (scrubbed)'),
});

const ListQuery = z.object({
  status: StatusSchema.default('unresolved'),
  environment: EnvironmentSchema.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().max(512).optional(),
  sort: z.enum(['count', 'lastSeen']).default('count').describe('count: most occurrences first; lastSeen: most recently seen first'),
  query: z.string().max(200).optional().describe('search: case-insensitive text in the name, message or culprit, or an exact groupId'),
});

const BulkBody = z
  .object({
    action: z.enum(['resolve', 'ignore', 'reopen']),
    groupIds: z.array(z.string().min(1).max(64)).min(1).max(100),
  })
  .strict();

/** The host-pattern rules domains use: `*.example.com` matches its subdomains (platform/host-patterns.ts). */
const HostnameSchema = hostPatternSchema({ wildcard: true, message: 'must be a hostname or *.hostname, optionally with a port (no scheme or path)' });

export const ErrorSettingsSchema = z.object({
  paused: z.boolean().describe('when true, ingest accepts and drops (204)'),
  ingestOrigins: z.array(z.string()).describe(`hostnames or *. patterns (optionally host:port) allowed to post from browsers; empty allows every origin; at most ${LIMITS.ingestOrigins.max}`),
});
const ErrorSettingsPatch = z
  .object({
    paused: z.boolean().optional(),
    ingestOrigins: z.array(HostnameSchema).max(LIMITS.ingestOrigins.max).transform((l) => [...new Set(l)]).optional(),
  })
  .strict();

export const AlertSettingsSchema = z.object({
  enabled: z.boolean(),
  recipients: z.array(z.string()).describe("alert recipients (the project's list, shared with uptime alerts); empty = the project owner"),
});
const AlertSettingsPatch = z
  .object({
    enabled: z.boolean().optional(),
    recipients: z.array(z.string().trim().toLowerCase().pipe(z.email())).max(50).transform((l) => [...new Set(l)]).optional(),
  })
  .strict();

const Errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };

export const errorRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db, clock, mailer, config, logger } = app.platform;

  app.get(
    '/v1/projects/:slug/errors',
    {
      config: { auth: AUTH.project('errors:read') },
      schema: {
        tags: ['errors'],
        summary: 'List issues, most occurrences first (default status unresolved); paginated with cursor',
        description: 'Filter by `status`, `environment` (issues with occurrences there) and `query`; order by `sort` (count or lastSeen). The cursor belongs to the sort it came from.',
        params: Params,
        querystring: ListQuery,
        response: { 200: z.object({ data: z.array(IssueSummarySchema), hasMore: z.boolean(), nextCursor: z.string().nullable() }), ...Errors },
      },
    },
    async (request) => listIssues(db, projectOf(request).id, request.query),
  );

  app.get(
    '/v1/projects/:slug/errors/settings',
    { config: { auth: AUTH.project('errors:read') }, schema: { tags: ['errors'], summary: 'Error settings', params: Params, response: { 200: ErrorSettingsSchema, ...Errors } } },
    async (request) => getErrorSettings(db, projectOf(request).id),
  );

  app.patch(
    '/v1/projects/:slug/errors/settings',
    {
      config: { auth: AUTH.project('errors:write') },
      schema: { tags: ['errors'], summary: 'Change paused and/or ingestOrigins', params: Params, body: ErrorSettingsPatch, response: { 200: ErrorSettingsSchema, ...Errors } },
    },
    async (request) => updateErrorSettings(db, projectOf(request).id, request.body, clock.now()),
  );

  app.get(
    '/v1/projects/:slug/errors/:groupId',
    {
      config: { auth: AUTH.project('errors:read') },
      schema: { tags: ['errors'], summary: 'One issue with stack, recent samples, suggestion and per-environment counts', params: GroupParams, response: { 200: z.object({ issue: IssueSchema }), ...Errors } },
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
          summary: { resolve: 'Resolve an unresolved issue', ignore: 'Ignore an unresolved issue (no more alert email)', reopen: 'Reopen a resolved or ignored issue' }[action],
          params: GroupParams,
          response: { 200: z.object({ issue: IssueSchema }), 409: ErrorBodySchema, ...Errors },
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
        description: 'Each issue moves as its single-issue route would (§3.1). Issues not in a state the action leaves from, or not found, are listed in `skipped` with the reason; the others are in `updated`.',
        params: Params,
        body: BulkBody,
        response: {
          200: z.object({
            updated: z.array(IssueSummarySchema),
            skipped: z.array(z.object({ groupId: z.string(), error: z.enum(['invalid_transition', 'not_found']), message: z.string(), status: StatusSchema.nullable() })),
          }),
          ...Errors,
        },
      },
    },
    async (request) => transitionIssues(db, projectOf(request).id, request.body.groupIds, request.body.action),
  );

  app.get(
    '/v1/projects/:slug/error-alerts',
    { config: { auth: AUTH.project('errors:read') }, schema: { tags: ['errors'], summary: 'Alert email settings', params: Params, response: { 200: AlertSettingsSchema, ...Errors } } },
    async (request) => getAlertSettings(db, projectOf(request).id),
  );

  app.patch(
    '/v1/projects/:slug/error-alerts',
    {
      config: { auth: AUTH.project('errors:write') },
      schema: { tags: ['errors'], summary: 'Toggle alert email and/or replace the recipient list', params: Params, body: AlertSettingsPatch, response: { 200: AlertSettingsSchema, ...Errors } },
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
        params: Params,
        response: { 202: z.object({ sent: z.literal(true), to: z.array(z.string()) }), 429: ErrorBodySchema, 503: ErrorBodySchema, ...Errors },
      },
    },
    async (request, reply) => {
      const project = projectOf(request);
      const now = clock.now();
      const claim = await claimTestAlert(db, project.id, now, LIMITS.errorAlert.testPerProjectMs);
      if (!claim.ok) throw new ServiceError('rate_limited', 'one test alert per 15 minutes', { retryAfterSec: claim.retryAfterSec });
      const to = await alertRecipients(db, project.id);
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
