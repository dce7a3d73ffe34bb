import { webhookRoutes } from './webhooks.ts';

/**
 * Every family's route shapes, gathered: with the route table (route-table.ts) what the API registers with
 * (api/declared-route.ts) and what the typed client (client.ts) derives its argument and answer types from.
 * One line a family.
 */
export const ROUTE_SHAPES = {
  ...webhookRoutes,
};
export type RouteShapes = typeof ROUTE_SHAPES;
export type ShapedRouteId = keyof RouteShapes;
