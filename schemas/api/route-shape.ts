import type { z } from 'zod';
import type { RouteId } from './route-table.ts';

/**
 * What a route takes and answers, in Fastify's schema words (so the API registers with it as it is): path params,
 * query string, body, answers by status, and what OpenAPI says of it. Its method and path are in the route table
 * (route-table.ts), under the same id.
 */
export interface RouteShape {
  tags: string[];
  summary: string;
  description?: string;
  /** Left out of the OpenAPI document (the document itself, assets). */
  hide?: boolean;
  /** Still served, but callers should not use it (OpenAPI marks it so). */
  deprecated?: boolean;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  headers?: z.ZodType;
  consumes?: string[];
  produces?: string[];
  response?: Record<number, z.ZodType>;
}

/** A family's routes, keyed by their ids in the route table: an id the table does not hold fails to typecheck. */
export function routeShapes<const T extends { [K in keyof T]: K extends RouteId ? RouteShape : never }>(shapes: T): T {
  return shapes;
}
