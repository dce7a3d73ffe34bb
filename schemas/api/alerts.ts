import { z } from 'zod';
import { ENVIRONMENTS } from '../error-event.ts';
import { ERROR_LEVELS } from '../error-context.ts';
import { LIMITS } from '../limits.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Alert rules per project (issue 41): when an issue earns an alert (triggers, any of them), for which environments and
 * levels, what it does (e-mail the project's alert recipients, and/or deliver `issue.alert` to chosen webhook
 * endpoints), throttled per rule and issue. A project that never wrote its rules has the default rule (`default: true`):
 * spec §7.6's e-mail for new production issues and regressions, at most one per issue every 6 hours.
 */
const L = LIMITS.alertRules;

export const ALERT_TRIGGER_TYPES = ['new_issue', 'regression', 'escalation', 'event_frequency', 'user_frequency'] as const;
export type AlertTriggerType = (typeof ALERT_TRIGGER_TYPES)[number];

const Count = z.number().int().min(L.count.min).max(L.count.max);
const Minutes = z.number().int().min(L.minutes.min).max(L.minutes.max);

export const AlertTriggerSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('new_issue') }).strict(),
    z.object({ type: z.literal('regression') }).strict(),
    z.object({ type: z.literal('escalation') }).strict(),
    z.object({ type: z.literal('event_frequency'), count: Count, minutes: Minutes }).strict(),
    z.object({ type: z.literal('user_frequency'), count: Count, minutes: Minutes }).strict(),
  ])
  .describe(
    'new_issue: the issue is new (to one of the rule’s environments when it names some); regression: a resolved issue came back; escalation: the escalation sweep found it escalating; event_frequency / user_frequency: `count` events, or distinct users (the event’s user id, e-mail, username or IP), in the last `minutes` minutes, counting only events the rule’s filters match',
  );
export type AlertTrigger = z.infer<typeof AlertTriggerSchema>;

const Environments = z
  .array(z.enum(ENVIRONMENTS))
  .max(L.environments)
  .transform((l) => [...new Set(l)])
  .describe(`the events' environments (${ENVIRONMENTS.join(', ')}) the rule looks at; empty = all`);
const Levels = z
  .array(z.enum(ERROR_LEVELS))
  .max(ERROR_LEVELS.length * 2)
  .transform((l) => [...new Set(l)])
  .describe(`the events' levels (${ERROR_LEVELS.join(', ')}; an event that sent none is \`error\`) the rule looks at; empty = all`);
const EndpointIds = z
  .array(z.string().min(1).max(64))
  .max(L.endpoints)
  .transform((l) => [...new Set(l)])
  .describe(`the project's webhook endpoints that receive \`issue.alert\` (at most ${L.endpoints}); signed, retried, in each endpoint's format`);

export const AlertActionsSchema = z
  .object({
    email: z.boolean().default(false).describe("e-mail the project's alert recipients (error-alerts `enabled: false` turns it off)"),
    endpointIds: EndpointIds.default([]),
  })
  .strict();

const Name = z.string().trim().min(1).max(L.nameChars);
const Throttle = z
  .number()
  .int()
  .min(L.throttleMinutes.min)
  .max(L.throttleMinutes.max)
  .describe('at most one alert per issue from this rule in this many minutes');
const Triggers = z.array(AlertTriggerSchema).min(1).max(L.triggers).describe('any of them fires the rule');

export const CreateAlertRuleBody = z
  .object({
    name: Name,
    enabled: z.boolean().default(true),
    triggers: Triggers,
    environments: Environments.default([]),
    levels: Levels.default([]),
    actions: AlertActionsSchema,
    throttleMinutes: Throttle.default(L.throttleMinutes.default),
  })
  .strict();
export type CreateAlertRuleBody = z.infer<typeof CreateAlertRuleBody>;

export const PatchAlertRuleBody = z
  .object({
    name: Name.optional(),
    enabled: z.boolean().optional(),
    triggers: Triggers.optional(),
    environments: Environments.optional(),
    levels: Levels.optional(),
    actions: z.object({ email: z.boolean().optional(), endpointIds: EndpointIds.optional() }).strict().optional(),
    throttleMinutes: Throttle.optional(),
  })
  .strict();
export type PatchAlertRuleBody = z.infer<typeof PatchAlertRuleBody>;

export const AlertRuleSchema = z.object({
  id: z.string(),
  name: z.string(),
  enabled: z.boolean(),
  default: z.boolean().describe('the rule every project starts with (id `default`), as stored or never written'),
  triggers: z.array(AlertTriggerSchema),
  environments: z.array(z.enum(ENVIRONMENTS)),
  levels: z.array(z.enum(ERROR_LEVELS)),
  actions: z.object({ email: z.boolean(), endpointIds: z.array(z.string()) }),
  throttleMinutes: z.number().int(),
  createdAt: z.string().nullable().describe('null for the default rule of a project that never wrote its rules'),
  updatedAt: z.string().nullable(),
});
export type AlertRule = z.infer<typeof AlertRuleSchema>;

export const AlertRuleAnswer = z.object({ rule: AlertRuleSchema });
export const AlertRuleList = z.object({
  rules: z.array(AlertRuleSchema),
  customized: z.boolean().describe('false: the project never wrote its rules and has the default rule'),
});
export type AlertRuleList = z.infer<typeof AlertRuleList>;

export const AlertRuleParams = z.object({ slug: z.string(), ruleId: z.string().max(64) });

const tags = ['errors'];
const errors = errorAnswers(400, 404);

/** The family's routes (paths in route-table.ts). Reads need `errors:read`, changes `errors:write`. */
export const alertRuleRoutes = routeShapes({
  listAlertRules: {
    tags,
    summary: "The project's alert rules; the default rule alone until the project writes its rules",
    params: SlugParams,
    response: { 200: AlertRuleList, ...errors },
  },
  createAlertRule: {
    tags,
    summary: `Add an alert rule (at most ${L.perProject} per project; 409 conflict beyond)`,
    description:
      "The first write keeps the default rule as a stored rule beside the new one. A rule needs an action: `email`, or webhook endpoints of this project (another project's endpoint answers 404).",
    params: SlugParams,
    body: CreateAlertRuleBody,
    response: { 201: AlertRuleAnswer, ...errorAnswers(409), ...errors },
  },
  getAlertRule: { tags, summary: 'One alert rule', params: AlertRuleParams, response: { 200: AlertRuleAnswer, ...errors } },
  updateAlertRule: {
    tags,
    summary: 'Change an alert rule (fields given replace theirs; `actions` fields one by one)',
    params: AlertRuleParams,
    body: PatchAlertRuleBody,
    response: { 200: AlertRuleAnswer, ...errors },
  },
  deleteAlertRule: {
    tags,
    summary: 'Delete an alert rule (the default one too: a project with no rules sends no alerts)',
    params: AlertRuleParams,
    response: { 204: NoContent, ...errors },
  },
});
