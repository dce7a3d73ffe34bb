import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ROUTE_SHAPES, type ShapedRouteId } from '../schemas/api/route-shapes.ts';
import { ROUTES } from '../schemas/api/route-table.ts';
import { declared } from './declared-route.ts';

/** Issue 39 §3 and §5: a route is registered as the table declares it, and an unknown query parameter is refused. */
describe('declared routes', () => {
  const ids = Object.keys(ROUTE_SHAPES) as ShapedRouteId[];

  it('take method and path from the table and the shape from the family', () => {
    expect(ids.length).toBeGreaterThan(0);
    for (const id of ids) {
      const route = declared(id);
      expect(route.method).toBe(ROUTES[id].method);
      expect(route.url).toBe(ROUTES[id].path);
      expect(route.schema.summary).toBe(ROUTE_SHAPES[id].summary);
    }
  });

  it('refuse a query parameter the route does not read, unless it takes any', () => {
    for (const id of ids) {
      const query = (declared(id).schema as { querystring?: z.ZodType }).querystring!;
      const declaredQuery = (ROUTE_SHAPES[id] as unknown as { querystring?: z.ZodType }).querystring;
      const takesAny = declaredQuery instanceof z.ZodObject && declaredQuery.def.catchall !== undefined && !(declaredQuery.def.catchall instanceof z.ZodNever);
      // Only the unknown key counts: a route's own required parameters (a callback's state) are missing here too.
      const parsed = query.safeParse({ definitelyNotAParameter: '1' });
      const refusedUnknown = !parsed.success && parsed.error.issues.some((i) => i.code === 'unrecognized_keys');
      expect(refusedUnknown, id).toBe(!takesAny);
    }
  });
});
