import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Platform } from '../../platform/platform.ts';
import { ALL_SCOPES, SCOPES, type Scope } from '../../schemas/scopes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf, userIdOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import { ingestDsn } from '../../platform/sentry-dsn.ts';
import { createKey, listKeys, projectNumber, revokeKey } from './keys-repository.ts';

/**
 * `/v1/projects/:slug/keys`. Creating and revoking keys is console-session only (a leaked key or
 * CLI token must not mint more keys); listing is also open to CLI tokens and keys with `keys:read`.
 */
const ScopeSchema = z.enum(ALL_SCOPES as [Scope, ...Scope[]]).describe(Object.entries(SCOPES).map(([k, v]) => `${k}: ${v}`).join('; '));

export const ApiKeySchema = z.object({
  id: z.string(),
  kind: z.enum(['live', 'test', 'ingest']),
  name: z.string(),
  hint: z.string(),
  scopes: z.array(z.string()),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
  revoked: z.boolean(),
});

export const CreateKeyBodySchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.enum(['live', 'test']).describe('cx_live_ / cx_test_ project API key'),
    name: z.string().trim().max(100).optional(),
    scopes: z.array(ScopeSchema).min(1).transform((s) => [...new Set(s)]),
  }).strict(),
  z.object({ kind: z.literal('ingest').describe('cak_live_ write-only ingest key: no scopes'), name: z.string().trim().max(100).optional() }).strict(),
]);

const Params = z.object({ slug: z.string() });
const KeyParams = z.object({ slug: z.string(), id: z.string() });

export function keysRoutes(platform: Platform): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.post(
      '/v1/projects/:slug/keys',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['keys'],
          summary: 'Create an API key or ingest key; the token is in this response only',
          params: Params,
          body: CreateKeyBodySchema,
          response: {
            201: z.object({
              key: ApiKeySchema.extend({
                token: z.string().describe('shown once; store it now'),
                dsn: z.string().optional().describe('ingest keys: the Sentry DSN of this key (the same secret), for Sentry SDKs; shown once'),
              }),
            }),
            400: ErrorBodySchema,
          },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const key = await createKey(db, {
          projectId: projectOf(request).id,
          kind: body.kind,
          name: body.name,
          scopes: body.kind === 'ingest' ? [] : body.scopes,
          createdBy: userIdOf(request),
          now: clock.now(),
        });
        if (key.kind !== 'ingest') return reply.code(201).send({ key });
        const dsn = ingestDsn(key.token, await projectNumber(db, projectOf(request).id), publicBaseUrl(platform.config));
        return reply.code(201).send({ key: { ...key, dsn } });
      },
    );

    app.get(
      '/v1/projects/:slug/keys',
      { config: { auth: AUTH.project('keys:read') }, schema: { tags: ['keys'], summary: "The project's keys (hints only, never tokens)", params: Params, response: { 200: z.object({ keys: z.array(ApiKeySchema) }) } } },
      async (request) => ({ keys: await listKeys(db, projectOf(request).id) }),
    );

    app.delete(
      '/v1/projects/:slug/keys/:id',
      { config: { auth: AUTH.sessionOnly }, schema: { tags: ['keys'], summary: 'Revoke a key (immediately refused everywhere)', params: KeyParams, response: { 200: z.object({ key: ApiKeySchema }), 404: ErrorBodySchema } } },
      async (request) => ({ key: await revokeKey(db, projectOf(request).id, request.params.id, clock.now()) }),
    );
  };
}
