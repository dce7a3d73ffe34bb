import { webhookRoutes } from './webhooks.ts';
import { mcpRoutes } from './mcp.ts';
import { errorRoutes } from './errors.ts';
import { alertRuleRoutes } from './alerts.ts';
import { analyticsRoutes } from './analytics.ts';
import { flagRoutes } from './flags.ts';
import { sourceMapRoutes } from './source-maps.ts';
import { cliRoutes } from './cli.ts';
import { deployRoutes } from './deploys.ts';
import { envRoutes } from './env.ts';
import { integrationRoutes } from './integrations.ts';
import { paymentRoutes } from './payments.ts';
import { emailRoutes } from './email.ts';
import { uptimeRoutes } from './uptime.ts';
import { statusIncidentRoutes } from './status-incidents.ts';
import { inboundRoutes } from './inbound.ts';
import { oauthRoutes } from './oauth.ts';
import { metaRoutes } from './meta.ts';
import { accountRoutes } from './accounts.ts';
import { projectRoutes } from './projects.ts';
import { domainRoutes } from './domains.ts';
import { keyRoutes } from './keys.ts';
import { billingRoutes } from './billing.ts';
import { feedbackRoutes } from './feedback.ts';
import { releaseHealthRoutes } from './release-health.ts';
import { statusSubscriberRoutes } from './status-subscribers.ts';

/**
 * Every family's route shapes, gathered: with the route table (route-table.ts) what the API registers with
 * (api/declared-route.ts) and what the typed client (client.ts) derives its argument and answer types from.
 * One line a family.
 */
export const ROUTE_SHAPES = {
  ...webhookRoutes,
  ...mcpRoutes,
  ...errorRoutes,
  ...alertRuleRoutes,
  ...analyticsRoutes,
  ...flagRoutes,
  ...sourceMapRoutes,
  ...cliRoutes,
  ...deployRoutes,
  ...envRoutes,
  ...integrationRoutes,
  ...paymentRoutes,
  ...emailRoutes,
  ...uptimeRoutes,
  ...statusIncidentRoutes,
  ...inboundRoutes,
  ...oauthRoutes,
  ...metaRoutes,
  ...accountRoutes,
  ...projectRoutes,
  ...domainRoutes,
  ...keyRoutes,
  ...billingRoutes,
  ...feedbackRoutes,
  ...releaseHealthRoutes,
  ...statusSubscriberRoutes,
};
export type RouteShapes = typeof ROUTE_SHAPES;
export type ShapedRouteId = keyof RouteShapes;
