import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { createAlertRule, deleteAlertRule, getAlertRule, listAlertRules, updateAlertRule } from '../../domain/alert-rules/alert-rules.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { declared } from '../declared-route.ts';

/**
 * Alert rules per project (issue 41, `/v1/projects/:slug/alerts/rules`): the rules' shapes are schemas/api/alerts.ts,
 * their storage and the default rule domain/alert-rules/alert-rules.ts, their evaluation processor/alerts/. Project
 * credential like the error routes: reads need `errors:read`, changes `errors:write`.
 */
const read = { auth: AUTH.project('errors:read') };
const write = { auth: AUTH.project('errors:write') };

export function alertRuleRoutes(platform: Pick<Platform, 'db' | 'clock'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.route({ ...declared('listAlertRules'), config: read, handler: async (request) => listAlertRules(db, projectOf(request).id) });
    app.route({
      ...declared('createAlertRule'),
      config: write,
      handler: async (request, reply) => reply.code(201).send({ rule: await createAlertRule(db, projectOf(request).id, request.body, clock.now()) }),
    });
    app.route({
      ...declared('getAlertRule'),
      config: read,
      handler: async (request) => ({ rule: await getAlertRule(db, projectOf(request).id, request.params.ruleId) }),
    });
    app.route({
      ...declared('updateAlertRule'),
      config: write,
      handler: async (request) => ({ rule: await updateAlertRule(db, projectOf(request).id, request.params.ruleId, request.body, clock.now()) }),
    });
    app.route({
      ...declared('deleteAlertRule'),
      config: write,
      handler: async (request, reply) => {
        await deleteAlertRule(db, projectOf(request).id, request.params.ruleId, clock.now());
        return reply.code(204).send(null);
      },
    });
  };
}
