import { z } from 'zod';

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
