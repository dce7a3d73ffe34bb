import { z } from 'zod';
import { EDGE_PATHS, EDGE_ROUTES, type EdgeRoute } from '../../schemas/api/edge.ts';
import { ErrorBodySchema } from '../../schemas/api/common.ts';
import { REFUSALS, type RefusalReason } from '../../schemas/edge-refusals.ts';
import { ERROR_CODES } from '../../schemas/error-codes.ts';

/**
 * The OpenAPI entries of the routes the uWebSockets.js edge serves (ingest/), which Fastify never sees: written from
 * the edge's route table (schemas/api/edge.ts) and its refusal table (schemas/edge-refusals.ts), and merged into
 * `GET /v1/openapi.json`.
 */
type Json = Record<string, unknown>;
const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Json;
const jsonOut = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Json;

/** The refusals of a route by HTTP status, each status described by the codes (and reasons) that answer with it. */
export function refusalAnswers(reasons: readonly RefusalReason[]): Record<number, Json> {
  const byStatus = new Map<number, Set<string>>();
  for (const reason of reasons) {
    const how: { code?: keyof typeof ERROR_CODES; status?: number } = REFUSALS[reason];
    if (!how.code) continue; // 204 paused: an answer, listed with the route's answers
    const status = ERROR_CODES[how.code];
    const codes = byStatus.get(status) ?? new Set<string>();
    codes.add(how.code === reason ? how.code : `${how.code} (${reason.replaceAll('_', ' ')})`);
    byStatus.set(status, codes);
  }
  const withRetryAfter = new Set([429, 503]);
  return Object.fromEntries(
    [...byStatus]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [
        status,
        {
          description: `${[...codes].join(', ')}${withRetryAfter.has(status) ? ' (Retry-After)' : ''}`,
          content: { 'application/json': { schema: jsonOut(ErrorBodySchema) } },
        },
      ]),
  );
}

/** `/api/:projectId/envelope/` in OpenAPI's form, `/api/{projectId}/envelope/`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z]+)/g, '{$1}');

function operation(route: EdgeRoute): Json {
  const pathParams = [...EDGE_PATHS[route.name].matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const parameters = [
    ...pathParams.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(route.query?.shape ?? {}).map(([name, schema]) => {
      const s = schema as z.ZodType;
      return { name, in: 'query', required: !s.safeParse(undefined).success, schema: json(s), ...(s.description ? { description: s.description } : {}) };
    }),
  ];
  const answers = Object.fromEntries(
    Object.entries(route.answers).map(([status, a]) => [
      status,
      { description: a.description, ...(a.schema ? { content: { 'application/json': { schema: jsonOut(a.schema) } } } : {}) },
    ]),
  );
  return {
    tags: ['ingest'],
    summary: route.summary,
    ...(route.ingestKey ? { security: [{ ingestKey: [] }] } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(route.body ? { requestBody: { required: true, content: { [route.body.contentType]: { schema: json(route.body.schema) } } } } : {}),
    responses: { ...answers, ...refusalAnswers(route.refusals) },
  };
}

let built: Json | undefined;

/** Built once: the tables do not change while the process runs. */
export function edgeOpenApiPaths(): Json {
  if (built) return built;
  const paths: Record<string, Json> = {};
  for (const route of EDGE_ROUTES) {
    const path = openApiPath(EDGE_PATHS[route.name]);
    paths[path] = { ...paths[path], [route.method]: operation(route) };
  }
  return (built = paths);
}
