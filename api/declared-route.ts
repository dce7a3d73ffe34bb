import { z } from 'zod';
import { ROUTES } from '../schemas/api/route-table.ts';
import { ROUTE_SHAPES, type RouteShapes, type ShapedRouteId } from '../schemas/api/route-shapes.ts';

/**
 * A route as the table declares it, ready for `app.route({ ...declared(id), config: { auth }, handler })`: its
 * method and path (schemas/api/route-table.ts) and its shape (schemas/api/<family>.ts). A query string names only the
 * parameters the route reads: an unknown one is refused (400 invalid_request), as an unknown body field is, so a
 * caller who misspells `from` learns it instead of silently getting the default range. A route that declares no query
 * string takes none; one whose callers are third parties that add their own (a provider's webhook) declares a
 * passthrough object.
 */
export function declared<Id extends ShapedRouteId>(id: Id): { method: (typeof ROUTES)[Id]['method']; url: string; schema: RouteShapes[Id] } {
  const { method, path } = ROUTES[id];
  const shape = ROUTE_SHAPES[id] as RouteShapes[Id] & { querystring?: unknown };
  const query = shape.querystring ?? NO_QUERY;
  const schema = { ...shape, querystring: query instanceof z.ZodObject && !isPassthrough(query) ? query.strict() : query };
  return { method, url: path, schema };
}

const NO_QUERY = z.object({});
const isPassthrough = (o: z.ZodObject) => o.def.catchall !== undefined && !(o.def.catchall instanceof z.ZodNever);
