import { publicBaseUrl } from '../../platform/config.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { AUTH } from '../auth/route-auth.ts';
import { edgeOpenApiPaths } from './edge-openapi.ts';
import { ApiIndexSchema } from '../../schemas/api/meta.ts';

/** `GET /v1/` (spec §1: a small index of the API) and the OpenAPI document. Both public. */
export const API_VERSION = '1.0.0';

const FAMILIES: Array<{ name: string; path: string; description: string }> = [
  { name: 'auth', path: '/v1/auth', description: 'console sign-in, sign-out and the current user' },
  { name: 'projects', path: '/v1/projects', description: 'create and list projects; /v1/projects/:slug is the dashboard rollup' },
  { name: 'keys', path: '/v1/projects/:slug/keys', description: 'project API keys (cx_live_, cx_test_) and ingest keys (cak_live_)' },
  { name: 'errors', path: '/v1/projects/:slug/errors', description: 'error issues, error settings and alerts' },
  { name: 'webhooks', path: '/v1/projects/:slug/webhooks', description: 'outbound project webhooks' },
  { name: 'deploys', path: '/v1/projects/:slug/deploys', description: 'build source, deploys, logs, rollback, cancel and deploy hooks' },
  { name: 'deploy hooks', path: '/v1/hooks/:token', description: 'queue a deploy with a deploy hook token (optionally signed)' },
  { name: 'shared deploy logs', path: '/v1/deploy-logs/:slug/:deployId?token=', description: "a deploy's build log through its share link" },
  { name: 'cli', path: '/v1/cli', description: 'CLI device login, whoami and CLI tokens' },
  { name: 'error ingest', path: '/v1/errors/i', description: 'write-only error ingest with an ingest key' },
  {
    name: 'error ingest on a site',
    path: '/service/v1/errors/i',
    description: "the same, on a site's own host: the platform attaches the project's ingest key (cx.js posts here)",
  },
  { name: 'Sentry SDK ingest', path: '/api/:projectNumber/envelope/', description: "Sentry SDKs pointed at an ingest key's DSN (also /store/)" },
  {
    name: 'source map uploads',
    path: '/api/0/organizations/:org/chunk-upload/',
    description: 'sentry-cli sourcemaps upload (and cx sourcemaps upload): chunk-upload options and chunks, then .../artifactbundle/assemble/',
  },
  { name: 'analytics ingest', path: '/v1/analytics/i', description: 'write-only analytics capture with an ingest key' },
  { name: 'flag evaluation', path: '/v1/flags/i', description: "a caller's feature flags, evaluated on the edge with an ingest key" },
  { name: 'analytics', path: '/v1/projects/:slug/analytics', description: 'trends, top events, breakdowns and raw events' },
  { name: 'flags', path: '/v1/projects/:slug/flags', description: 'feature flags: rollouts, variants, payloads, conditions' },
  { name: 'widget assets', path: '/v1/w/cx.js', description: 'the browser client; /v1/w/manifest.json names its versioned, immutable URL' },
  {
    name: 'inbound provider webhooks',
    path: '/v1/webhooks/code_host',
    description: 'GitHub (code_host), Stripe (payments, payments/connect) and Resend (email) deliveries, verified by their signatures',
  },
  {
    name: 'code-host integration',
    path: '/v1/integrations/github',
    description: 'connect GitHub repositories to projects through the GitHub App: their pushes deploy',
  },
  { name: 'payments', path: '/v1/projects/:slug/payments', description: "connected Stripe accounts: their payments become the project's order.* events" },
  { name: 'billing', path: '/v1/billing', description: "each project's plan state, from the platform's own Stripe events" },
];

export function metaRoutes(platform: Pick<Platform, 'config'>): FastifyPluginAsyncZod {
  return async (app) => {
    const base = publicBaseUrl(platform.config);
    app.get(
      '/v1/',
      { config: { auth: AUTH.public }, schema: { tags: ['meta'], summary: 'Index of the API', response: { 200: ApiIndexSchema } } },
      async () => ({
        name: 'Service API',
        version: API_VERSION,
        apiVersion: 'v1' as const,
        openapi: `${base}/v1/openapi.json`,
        families: FAMILIES.map((f) => ({ ...f, path: `${base}${f.path}` })),
        credentials: [
          { kind: 'session', carriedAs: 'cookie cx_session (POST /v1/auth/sign-in)', reaches: 'everything the console can do' },
          {
            kind: 'cx_cli_',
            carriedAs: 'Authorization: Bearer (CLI login, or the SERVICE_TOKEN environment variable)',
            reaches: "the user's projects and CLI flows",
          },
          { kind: 'cx_live_ / cx_test_', carriedAs: 'Authorization: Bearer', reaches: "one project's routes within the key's scopes" },
          { kind: 'cak_live_', carriedAs: 'Authorization: Bearer or x-service-analytics-key', reaches: 'the write-only ingest routes only' },
        ],
      }),
    );
    app.get('/v1/openapi.json', { config: { auth: AUTH.public }, schema: { hide: true } }, async () => {
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
    });
  };
}
