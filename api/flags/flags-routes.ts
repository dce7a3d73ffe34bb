import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { FlagConditionSchema, FlagDefinitionSchema, flagProblems, FlagVariantSchema, type FlagDefinition } from '../../schemas/flags.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
import { createFlag, deleteFlag, getFlag, listFlags, replaceFlag } from './flags-repository.ts';

/**
 * `/v1/projects/:slug/flags` (issue 16): feature flags. Reads for a session, a CLI token or a key with `flags:read`;
 * writes for a session, a CLI token or a key with `flags:write`. The edge evaluates them at `GET /v1/flags/i` from
 * memory (ingest/flags-route.ts); a change reaches it with its next refresh (SETTINGS_REFRESH_MS, 2 s).
 */
const Params = z.object({ slug: z.string() });
const KeyParams = z.object({ slug: z.string(), key: z.string().max(100) });
const FlagSchema = z.object({
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
/**
 * A change names only the fields it changes. zod 4 applies a field's default even inside `.partial()`, which would
 * reset every unnamed field (rollout to 100, variants and conditions to none); the defaults are unwrapped first.
 */
const PatchSchema = z
  .object(
    Object.fromEntries(
      Object.entries(FlagDefinitionSchema.omit({ key: true }).shape).map(([name, field]) => [name, (field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType)).optional()]),
    ) as { [K in keyof Omit<FlagDefinition, 'key'>]-?: z.ZodOptional<z.ZodType<Omit<FlagDefinition, 'key'>[K]>> },
  )
  .strict();
const Errors = { 400: ErrorBodySchema, 404: ErrorBodySchema, 409: ErrorBodySchema };

function checked(def: FlagDefinition): FlagDefinition {
  const problems = flagProblems(def);
  if (problems.length) throw new ServiceError('invalid_request', `invalid flag: ${problems.map((p) => p.message).join('; ')}`, { fields: problems });
  return def;
}

export function flagsRoutes(platform: Platform): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const read = { auth: AUTH.project('flags:read') };
  const write = { auth: AUTH.project('flags:write') };
  return async (app) => {
    app.get('/v1/projects/:slug/flags', { config: read, schema: { tags: ['flags'], summary: "The project's feature flags", params: Params, response: { 200: z.object({ data: z.array(FlagSchema) }), ...Errors } } }, async (request) => ({
      data: await listFlags(db, projectOf(request).id),
    }));

    app.post(
      '/v1/projects/:slug/flags',
      {
        config: write,
        schema: {
          tags: ['flags'],
          summary: 'Create a flag: key, description, enabled, rolloutPercentage (0-100), variants with weights adding to 100, payload (JSON), conditions on properties and environments',
          params: Params,
          body: FlagDefinitionSchema.strict(),
          response: { 201: z.object({ flag: FlagSchema }), ...Errors },
        },
      },
      async (request, reply) => reply.code(201).send({ flag: await createFlag(db, projectOf(request).id, checked(request.body), clock.now()) }),
    );

    app.get('/v1/projects/:slug/flags/:key', { config: read, schema: { tags: ['flags'], summary: 'One flag', params: KeyParams, response: { 200: z.object({ flag: FlagSchema }), ...Errors } } }, async (request) => ({
      flag: await getFlag(db, projectOf(request).id, request.params.key),
    }));

    app.patch(
      '/v1/projects/:slug/flags/:key',
      { config: write, schema: { tags: ['flags'], summary: 'Change a flag (any field but its key)', params: KeyParams, body: PatchSchema, response: { 200: z.object({ flag: FlagSchema }), ...Errors } } },
      async (request) => {
        const projectId = projectOf(request).id;
        const { id: _id, createdAt: _c, updatedAt: _u, ...current } = await getFlag(db, projectId, request.params.key);
        const next = FlagDefinitionSchema.parse({ ...current, ...request.body });
        return { flag: await replaceFlag(db, projectId, checked(next), clock.now()) };
      },
    );

    app.delete('/v1/projects/:slug/flags/:key', { config: write, schema: { tags: ['flags'], summary: 'Delete a flag', params: KeyParams, response: { 200: z.object({ deleted: z.literal(true) }), ...Errors } } }, async (request) => {
      await deleteFlag(db, projectOf(request).id, request.params.key);
      return { deleted: true as const };
    });
  };
}
