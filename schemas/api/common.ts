import { z } from 'zod';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../error-codes.ts';

/**
 * The wire contract of the `/v1` API, one module per family (`schemas/api/<family>.ts`): request and response
 * schemas that the routes validate and serialize with, that OpenAPI is generated from, and whose inferred types
 * the repositories' mappers, the console and the SDKs use (the last two with `import type`, so no zod reaches a
 * browser). Change a shape here and every side that reads it fails to typecheck until it follows.
 */

/** Every failure's body (spec §8.1): `{ error, message }`, plus `fields` on invalid_request. */
export const ErrorBodySchema = z
  .object({
    error: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]).describe('machine-readable code: the contract'),
    message: z.string().describe('for people; may change'),
    fields: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('invalid_request: the offending fields'),
  })
  .passthrough();
export type { ErrorBody };
export type FieldError = NonNullable<ErrorBody['fields']>[number];

/** The error answers a route documents, by status: `errorAnswers(400, 404)`. */
export function errorAnswers<S extends number>(...statuses: S[]): Record<S, typeof ErrorBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBodySchema])) as Record<S, typeof ErrorBodySchema>;
}

/** A route with no answer body (204). */
export const NoContent = z.null();

/** `/v1/projects/:slug/...` */
export const SlugParams = z.object({ slug: z.string() });
/** `/v1/projects/:slug/<things>/:id` */
export const SlugIdParams = z.object({ slug: z.string(), id: z.string().max(64) });

/** A cursor page: `data`, whether more follow, and the cursor to ask for them with. */
export function pageOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), hasMore: z.boolean(), nextCursor: z.string().nullable() });
}
export interface Page<T> {
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}
