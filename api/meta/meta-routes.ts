import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { edgeOpenApiPaths } from './edge-openapi.ts';
import { EDGE_PATHS, EDGE_SUPPORT_PATHS, ROUTES, type RouteId } from '../../schemas/api/route-table.ts';
import { declared } from '../declared-route.ts';

/** `GET /v1/` (spec §1: a small index of the API) and the OpenAPI document. Both public. */
export const API_VERSION = '1.0.0';

/** Where a family's routes live: the longest path, segment by segment, that all of them start with. */
function familyPath(...ids: RouteId[]): string {
  const [first, ...rest] = ids.map((id) => ROUTES[id].path.split('/'));
  let n = first!.length;
  for (const segments of rest) {
    let same = 0;
    while (same < n && segments[same] === first![same]) same++;
    n = same;
  }
  return first!.slice(0, n).join('/');
}

const FAMILIES: Array<{ name: string; path: string; description: string }> = [
  { name: 'auth', path: familyPath('signIn', 'signOut', 'me'), description: 'console sign-in, sign-out and the current user' },
  {
    name: 'projects',
    path: ROUTES.listProjects.path,
    description: `create and list projects; ${ROUTES.getProject.path} is the dashboard rollup`,
  },
  {
    name: 'domains',
    path: ROUTES.listDomains.path,
    description: "a project's custom domains: claimed, proven by a DNS TXT record, then serving its production site",
  },
  { name: 'keys', path: ROUTES.listKeys.path, description: 'project API keys (cx_live_, cx_test_) and ingest keys (cak_live_)' },
  { name: 'errors', path: ROUTES.listIssues.path, description: 'error issues, error settings and alerts' },
  {
    name: 'release health',
    path: ROUTES.getReleaseHealth.path,
    description: `crash-free sessions and users per deploy over time, from Sentry SDK sessions; one deploy: ${ROUTES.getDeployHealth.path}`,
  },
  { name: 'webhooks', path: ROUTES.listWebhookEndpoints.path, description: 'outbound project webhooks' },
  { name: 'deploys', path: ROUTES.listDeploys.path, description: 'build source, deploys, logs, rollback, cancel and deploy hooks' },
  { name: 'deploy hooks', path: ROUTES.triggerDeployHook.path, description: 'queue a deploy with a deploy hook token (optionally signed)' },
  { name: 'shared deploy logs', path: `${ROUTES.getSharedDeployLog.path}?token=`, description: "a deploy's build log through its share link" },
  {
    name: 'cli',
    path: familyPath('startDeviceLogin', 'whoami', 'listCliTokens', 'revokeCliToken'),
    description: 'CLI device login, whoami and CLI tokens',
  },
  { name: 'error ingest', path: EDGE_PATHS.errors, description: 'write-only error ingest with an ingest key' },
  {
    name: 'error ingest on a site',
    path: EDGE_PATHS.siteErrors,
    description: "the same, on a site's own host: the platform attaches the project's ingest key (cx.js posts here)",
  },
  { name: 'Sentry SDK ingest', path: EDGE_PATHS.sentryEnvelope, description: "Sentry SDKs pointed at an ingest key's DSN (also /store/)" },
  {
    name: 'source map uploads',
    path: ROUTES.chunkUploadOptions.path,
    description: 'sentry-cli sourcemaps upload (and cx sourcemaps upload): chunk-upload options and chunks, then .../artifactbundle/assemble/',
  },
  { name: 'analytics ingest', path: EDGE_PATHS.analytics, description: 'write-only analytics capture with an ingest key' },
  { name: 'flag evaluation', path: EDGE_PATHS.flags, description: "a caller's feature flags, evaluated on the edge with an ingest key" },
  {
    name: 'analytics',
    path: familyPath('analyticsTrends', 'analyticsTopEvents', 'analyticsBreakdown', 'analyticsEvents'),
    description: 'trends, top events, breakdowns and raw events',
  },
  { name: 'flags', path: ROUTES.listFlags.path, description: 'feature flags: rollouts, variants, payloads, conditions' },
  {
    name: 'widget assets',
    path: EDGE_PATHS.widget,
    description: `the browser client; ${EDGE_SUPPORT_PATHS.widgetPrefix}manifest.json names its versioned, immutable URL`,
  },
  {
    name: 'inbound provider webhooks',
    path: ROUTES.inboundCodeHost.path,
    description: 'GitHub (code_host), Stripe (payments, payments/connect) and Resend (email) deliveries, verified by their signatures',
  },
  {
    name: 'code-host integration',
    path: ROUTES.connectGithub.path,
    description: 'connect GitHub repositories to projects through the GitHub App: their pushes deploy',
  },
  { name: 'payments', path: ROUTES.listPaymentAccounts.path, description: "connected Stripe accounts: their payments become the project's order.* events" },
  { name: 'billing', path: ROUTES.billing.path, description: "each project's plan state, from the platform's own Stripe events" },
];

export function metaRoutes(platform: Pick<Platform, 'config'>): FastifyPluginAsyncZod {
  return async (app) => {
    const base = publicBaseUrl(platform.config);
    app.route({
      ...declared('apiIndex'),
      config: { auth: AUTH.public },
      handler: async () => ({
        name: 'Service API',
        version: API_VERSION,
        apiVersion: 'v1' as const,
        openapi: `${base}${ROUTES.openApiDocument.path}`,
        families: FAMILIES.map((f) => ({ ...f, path: `${base}${f.path}` })),
        credentials: [
          { kind: 'session', carriedAs: `cookie cx_session (${ROUTES.signIn.method} ${ROUTES.signIn.path})`, reaches: 'everything the console can do' },
          {
            kind: 'cx_cli_',
            carriedAs: 'Authorization: Bearer (CLI login, or the SERVICE_TOKEN environment variable)',
            reaches: "the user's projects and CLI flows",
          },
          { kind: 'cx_live_ / cx_test_', carriedAs: 'Authorization: Bearer', reaches: "one project's routes within the key's scopes" },
          { kind: 'cak_live_', carriedAs: 'Authorization: Bearer or x-service-analytics-key', reaches: 'the write-only ingest routes only' },
        ],
      }),
    });
    app.route({
      ...declared('openApiDocument'),
      config: { auth: AUTH.public },
      handler: async () => {
        const doc = app.swagger() as { paths?: Record<string, unknown>; components?: { securitySchemes?: Record<string, unknown> } };
        return {
          ...doc,
          paths: { ...edgeOpenApiPaths(), ...doc.paths },
          components: {
            ...doc.components,
            securitySchemes: {
              ...doc.components?.securitySchemes,
              ingestKey: {
                type: 'http',
                scheme: 'bearer',
                description: "`cak_live_` ingest key (or the x-service-analytics-key header): the edge's ingest routes only",
              },
            },
          },
        };
      },
    });
  };
}
