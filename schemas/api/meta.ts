import { z } from 'zod';
import { routeShapes } from './route-shape.ts';

/** `GET /v1/`: a small index of the API (spec §1). */
export const ApiIndexSchema = z.object({
  name: z.string(),
  version: z.string(),
  apiVersion: z.literal('v1'),
  openapi: z.string().describe('URL of the OpenAPI document'),
  families: z.array(z.object({ name: z.string(), path: z.string(), description: z.string() })),
  credentials: z.array(z.object({ kind: z.string(), carriedAs: z.string(), reaches: z.string() })),
});
export type ApiIndex = z.infer<typeof ApiIndexSchema>;

const tags = ['meta'];

/** The family's routes (paths in route-table.ts). */
export const metaRoutes = routeShapes({
  apiIndex: { tags, summary: 'Index of the API', response: { 200: ApiIndexSchema } },
  // The document itself is not one of its own entries.
  openApiDocument: { tags, summary: 'The OpenAPI document of the API and the ingest edge', hide: true },
});
