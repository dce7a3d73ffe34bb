import { z } from 'zod';
import { ALL_SCOPES, SCOPES, type Scope } from '../scopes.ts';
import { errorAnswers, SlugIdParams, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** API keys and ingest keys (spec §2.1, §4.1). */
export const ScopeSchema = z.enum(ALL_SCOPES as [Scope, ...Scope[]]).describe(
  Object.entries(SCOPES)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; '),
);
export const KeyKindSchema = z.enum(['live', 'test', 'ingest']);
export type KeyKind = z.infer<typeof KeyKindSchema>;

export const ApiKeySchema = z.object({
  id: z.string(),
  kind: KeyKindSchema,
  name: z.string(),
  hint: z.string().describe('e.g. `cx_live_Ab3x…`: enough to recognise a key, never enough to use it'),
  scopes: z.array(ScopeSchema),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revoked: z.boolean(),
});
export type ApiKey = z.infer<typeof ApiKeySchema>;
export const ApiKeyAnswer = z.object({ key: ApiKeySchema });
export type ApiKeyAnswer = z.infer<typeof ApiKeyAnswer>;
export const ApiKeyList = z.object({ keys: z.array(ApiKeySchema) });
export type ApiKeyList = z.infer<typeof ApiKeyList>;

export const CreateKeyBody = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.enum(['live', 'test']).describe('cx_live_ / cx_test_ project API key'),
      name: z.string().trim().max(100).optional(),
      scopes: z
        .array(ScopeSchema)
        .min(1)
        .transform((s) => [...new Set(s)]),
    })
    .strict(),
  z.object({ kind: z.literal('ingest').describe('cak_live_ write-only ingest key: no scopes'), name: z.string().trim().max(100).optional() }).strict(),
]);
export type CreateKeyBody = z.input<typeof CreateKeyBody>;

export const CreatedKeySchema = ApiKeySchema.extend({
  token: z.string().describe('shown once; store it now'),
  dsn: z.string().optional().describe('ingest keys: the Sentry DSN of this key (the same secret), for Sentry SDKs; shown once'),
});
export type CreatedKey = z.infer<typeof CreatedKeySchema>;
export const CreatedKeyAnswer = z.object({ key: CreatedKeySchema });
export type CreatedKeyAnswer = z.infer<typeof CreatedKeyAnswer>;

const tags = ['keys'];

/** The family's routes (paths in route-table.ts). */
export const keyRoutes = routeShapes({
  createKey: {
    tags,
    summary: 'Create an API key or ingest key; the token is in this response only',
    params: SlugParams,
    body: CreateKeyBody,
    response: { 201: CreatedKeyAnswer, ...errorAnswers(400) },
  },
  listKeys: { tags, summary: "The project's keys (hints only, never tokens)", params: SlugParams, response: { 200: ApiKeyList } },
  revokeKey: { tags, summary: 'Revoke a key (immediately refused everywhere)', params: SlugIdParams, response: { 200: ApiKeyAnswer, ...errorAnswers(404) } },
});
