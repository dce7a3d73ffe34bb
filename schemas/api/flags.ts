import { z } from 'zod';
import { FlagConditionSchema, FlagDefinitionSchema, FlagVariantSchema, type FlagDefinition } from '../flags.ts';
import { errorAnswers, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** Feature flags (spec §4.7): the definitions a project manages; the edge evaluates them (schemas/flags.ts). */
export const FlagKeyParams = z.object({ slug: z.string(), key: z.string().max(100) });

export const FlagSchema = z.object({
  id: z.string(),
  key: z.string(),
  description: z.string(),
  enabled: z.boolean(),
  rolloutPercentage: z.number(),
  variants: z.array(FlagVariantSchema),
  payload: z.unknown().optional(),
  conditions: z.array(FlagConditionSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
});
/** A flag as stored and answered: its definition, its id and when it was made and last changed. */
export type Flag = FlagDefinition & { id: string; createdAt: string; updatedAt: string };
export const FlagAnswer = z.object({ flag: FlagSchema });
export type FlagAnswer = z.infer<typeof FlagAnswer>;
export const FlagList = z.object({ data: z.array(FlagSchema) });
export type FlagList = z.infer<typeof FlagList>;
export const CreateFlagBody = FlagDefinitionSchema.strict();
export type CreateFlagBody = z.input<typeof CreateFlagBody>;

/**
 * A change names only the fields it changes. zod 4 applies a field's default even inside `.partial()`, which would
 * reset every unnamed field (rollout to 100, variants and conditions to none); the defaults are unwrapped first.
 */
export const PatchFlagBody = z
  .object(
    Object.fromEntries(
      Object.entries(FlagDefinitionSchema.omit({ key: true }).shape).map(([name, field]) => [
        name,
        (field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType)).optional(),
      ]),
    ) as { [K in keyof Omit<FlagDefinition, 'key'>]-?: z.ZodOptional<z.ZodType<Omit<FlagDefinition, 'key'>[K]>> },
  )
  .strict();
export type PatchFlagBody = z.infer<typeof PatchFlagBody>;
export const DeletedAnswer = z.object({ deleted: z.literal(true) });
export type DeletedAnswer = z.infer<typeof DeletedAnswer>;

/**
 * `GET /flags/definitions` and `GET /api/feature_flag/local_evaluation` (issue 28): PostHog's server SDKs fetch the
 * project's flags here to evaluate them locally. posthog-node sends `?token=<project API key>&send_cohorts`; the
 * callers are PostHog's SDKs, each language's its own, so parameters the route does not read pass through unread
 * rather than failing a server's flags.
 */
export const LocalEvaluationQuery = z.object({ token: z.string().max(200).optional(), send_cohorts: z.string().optional() }).passthrough();
export const LocalEvaluationAnswer = z.object({
  flags: z.array(z.looseObject({ key: z.string() })).describe("PostHog's flag definitions (filters.groups, multivariate, payloads)"),
  group_type_mapping: z.record(z.string(), z.string()),
  cohorts: z.record(z.string(), z.unknown()),
});

const tags = ['flags'];
const errors = errorAnswers(400, 404, 409);
const localEvaluation = {
  tags,
  summary: "PostHog's server SDKs' local evaluation: the project's flags as PostHog definitions (a key with flags:read)",
  querystring: LocalEvaluationQuery,
  response: { 200: LocalEvaluationAnswer, 304: z.void().describe('not changed since the ETag given'), ...errorAnswers(401, 403) },
};

/** The family's routes (paths in route-table.ts). */
export const flagRoutes = routeShapes({
  listFlags: { tags, summary: "The project's feature flags", params: SlugParams, response: { 200: FlagList, ...errors } },
  createFlag: {
    tags,
    summary:
      'Create a flag: key, description, enabled, rolloutPercentage (0-100), variants with weights adding to 100, payload (JSON), conditions on properties and environments',
    params: SlugParams,
    body: CreateFlagBody,
    response: { 201: FlagAnswer, ...errors },
  },
  getFlag: { tags, summary: 'One flag', params: FlagKeyParams, response: { 200: FlagAnswer, ...errors } },
  updateFlag: { tags, summary: 'Change a flag (any field but its key)', params: FlagKeyParams, body: PatchFlagBody, response: { 200: FlagAnswer, ...errors } },
  deleteFlag: { tags, summary: 'Delete a flag', params: FlagKeyParams, response: { 200: DeletedAnswer, ...errors } },
  flagDefinitions: localEvaluation,
  posthogLocalEvaluation: localEvaluation,
});
