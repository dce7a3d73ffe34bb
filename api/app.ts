import { JSON_TOO_DEEP_MESSAGE, jsonDepthExceededAt } from '../platform/bounded-json.ts';
import { isUtf8 } from 'node:buffer';
import Fastify, { LogController, type FastifyInstance, type FastifyPluginAsync, type FastifySchema } from 'fastify';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { Platform } from '../platform/platform.ts';
import { ServiceError } from '../schemas/error-codes.ts';
import { installErrorHandling } from './http-errors.ts';
import { installAuth } from './auth/auth-plugin.ts';
import { installDiskGuard } from './disk-guard.ts';
import type { RouteAuth } from './auth/route-auth.ts';
import { SESSION_COOKIE } from './auth/credentials.ts';
import { ROUTES } from '../schemas/api/route-table.ts';
import { accountsRoutes } from './accounts/accounts-routes.ts';
import { projectsRoutes } from './projects/projects-routes.ts';
import { domainsRoutes } from './domains/domains-routes.ts';
import { keysRoutes } from './keys/keys-routes.ts';
import { cliRoutes } from './cli/cli-routes.ts';
import { metaRoutes, API_VERSION } from './meta/meta-routes.ts';
import { errorRoutes } from './errors/error-routes.ts';
import { alertRuleRoutes } from './alerts/alert-rule-routes.ts';
import { feedbackRoutes } from './feedback/feedback-routes.ts';
import { webhookRoutes } from './webhooks/webhook-routes.ts';
import { deploysRoutes } from './deploys/deploys-routes.ts';
import { prebuiltRoutes } from './deploys/prebuilt-routes.ts';
import type { DeployPrebuilt } from '../domain/deploys/prebuilt.ts';
import { deployCommitsRoutes } from './deploys/deploy-commits-routes.ts';
import { hookRoutes } from './deploys/hook-routes.ts';
import { deployLogShareRoutes } from './deploys/deploy-log-share-routes.ts';
import { envRoutes } from './env/env-routes.ts';
import { analyticsRoutes } from './analytics/analytics-routes.ts';
import { releaseHealthRoutes } from './release-health/release-health-routes.ts';
import { flagsRoutes } from './flags/flags-routes.ts';
import { localEvaluationRoutes } from './flags/local-evaluation-routes.ts';
import { installSiteHosting } from './sites/site-hosting.ts';
import { consoleBundle } from './console/console-assets.ts';
import { consoleRoutes } from './console/console-routes.ts';
import { inboundRoutes } from './inbound/inbound-routes.ts';
import { githubIntegrationRoutes } from './integrations/github-routes.ts';
import { paymentsRoutes } from './payments/payments-routes.ts';
import { billingRoutes } from './billing/billing-routes.ts';
import { inboxRoutes } from './email/inbox-routes.ts';
import { monitorRoutes } from './uptime/monitor-routes.ts';
import { statusRoute } from './uptime/status-route.ts';
import { writtenStatusRoutes } from './status/written-status-routes.ts';
import { statusSubscriberRoutes } from './status-subscribers/status-subscriber-routes.ts';
import { mcpRoutes } from './mcp/mcp-route.ts';
import { oauthRoutes } from './oauth/oauth-routes.ts';
import { sourceMapRoutes } from './source-maps/source-map-routes.ts';
import { opsRoutes } from './meta/ops-routes.ts';
import type { Ops } from '../platform/ops/ops.ts';

/**
 * The Fastify control API (every `/v1` route but the ingest edge's). Order matters:
 *  1. zod validator/serializer, cookies, OpenAPI collection (it must see every route);
 *  2. error shape and not-found handling, then the auth hook (onRoute makes a route without
 *     `config.auth` fail at start-up; onRequest checks every request);
 *  3. every route family, one folder each; then `opts.plugins` (tests add probes the same way), each
 *     declaring `config: { auth }` and reading `request.credential` / `request.project`.
 */
declare module 'fastify' {
  interface FastifyInstance {
    /** The ports, for tests' probes: route families take theirs as an argument (one way of passing dependencies). */
    platform: Platform;
  }
}

export interface BuildApiOptions {
  plugins?: FastifyPluginAsync[];
  /** `/livez`, `/readyz`, `/metrics` on the API's port, and the answer times /metrics shows (platform/ops/). */
  ops?: Ops;
  /** Prebuilt uploads made deploys (builder/prebuilt-deploy.ts); without it, POST .../deploys/prebuilt answers 503. */
  deployPrebuilt?: DeployPrebuilt;
}

export async function buildApiApp(platform: Platform, opts: BuildApiOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: platform.logger,
    // One line per request only at debug (below): at info, request logs buried the first start's credentials.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: platform.config.TRUST_PROXY,
    routerOptions: { ignoreTrailingSlash: true },
  }) as unknown as FastifyInstance;
  app.decorate('platform', platform);
  const metrics = opts.ops?.metrics;
  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    // By route pattern, never the URL (whose ids would make a series per request); unmatched requests share one.
    metrics?.observeApiAnswer(request.method, request.routeOptions.url ?? '(unmatched)', reply.statusCode, reply.elapsedTime / 1000);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // JSON only: text/plain is what a cross-site HTML form or no-cors fetch can send without a preflight.
  app.removeContentTypeParser('text/plain');
  // JSON is UTF-8 (RFC 8259): a body that is not is refused (400 invalid_request), as the edge refuses it,
  // instead of having its bad bytes silently replaced with U+FFFD.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    // Routing comes first: an unknown route is 404 whatever its body (the 404 handler is a route too, so Fastify
    // would parse the body for it).
    if (request.is404) return done(null, undefined);
    if (!isUtf8(bytes)) return done(new ServiceError('invalid_request', 'the body is not valid UTF-8'), undefined);
    const text = bytes.toString('utf8');
    if (jsonDepthExceededAt(text) !== -1) return done(new ServiceError('invalid_request', `the body is ${JSON_TOO_DEEP_MESSAGE}`), undefined);
    void parseJson(request, text, done);
  });

  await app.register(cookie);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Service API',
        version: API_VERSION,
        description:
          'Every failure is `{ "error": "<code>", "message": "..." }`; `error` is the contract. ' +
          'Credentials: console session cookie, `cx_cli_` CLI tokens (clients also read the SERVICE_TOKEN environment variable), ' +
          '`cx_live_`/`cx_test_` project API keys limited to their scopes. Ingest keys (`cak_live_`) work only on the ingest routes.',
      },
      servers: platform.config.PUBLIC_BASE_URL ? [{ url: platform.config.PUBLIC_BASE_URL }] : [],
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: `console session (${ROUTES.signIn.method} ${ROUTES.signIn.path})` },
          cliToken: {
            type: 'http',
            scheme: 'bearer',
            description: `\`cx_cli_\` token from the device login (${ROUTES.startDeviceLogin.path}); CLIs also read SERVICE_TOKEN`,
          },
          apiKey: { type: 'http', scheme: 'bearer', description: '`cx_live_`/`cx_test_` project API key; reaches its own project within its scopes' },
        },
      },
    },
    transform: (input) => {
      const out = jsonSchemaTransform(input);
      const auth = input.route.config?.auth as RouteAuth | undefined;
      const schema = { ...(out.schema as Record<string, unknown>) };
      if (auth && !auth.public) {
        schema.security = [
          ...(auth.session ? [{ session: [] }] : []),
          ...(auth.cli ? [{ cliToken: [] }] : []),
          ...(auth.keyScope ? [{ apiKey: [auth.keyScope] }] : auth.anyKey ? [{ apiKey: [] }] : []),
        ];
      } else if (auth?.public) schema.security = [];
      return { schema: schema as FastifySchema, url: out.url };
    },
  });

  installErrorHandling(app);
  // Site hosts are answered before the auth hook: a site is public, and its paths are not API routes.
  installSiteHosting(app, platform);
  installAuth(app, platform);
  // While DATA_DIR's disk is low: reads answer, writes 503 (disk-guard.ts).
  installDiskGuard(app, platform.disk);

  await app.register(metaRoutes(platform));
  await app.register(accountsRoutes(platform));
  await app.register(projectsRoutes(platform));
  await app.register(domainsRoutes(platform));
  await app.register(keysRoutes(platform));
  await app.register(cliRoutes(platform));
  await app.register(errorRoutes(platform));
  await app.register(alertRuleRoutes(platform));
  await app.register(feedbackRoutes(platform));
  await app.register(webhookRoutes(platform));
  await app.register(deploysRoutes(platform));
  await app.register(prebuiltRoutes(platform, opts.deployPrebuilt));
  await app.register(deployCommitsRoutes(platform));
  await app.register(hookRoutes(platform));
  await app.register(deployLogShareRoutes(platform));
  await app.register(envRoutes(platform));
  await app.register(analyticsRoutes(platform));
  await app.register(releaseHealthRoutes(platform));
  await app.register(flagsRoutes(platform));
  await app.register(localEvaluationRoutes(platform));
  await app.register(inboundRoutes(platform));
  await app.register(githubIntegrationRoutes(platform));
  await app.register(paymentsRoutes(platform));
  await app.register(billingRoutes(platform));
  await app.register(inboxRoutes(platform));
  await app.register(monitorRoutes(platform));
  await app.register(statusRoute(platform));
  await app.register(writtenStatusRoutes(platform));
  await app.register(statusSubscriberRoutes(platform));
  await app.register(mcpRoutes(platform, () => app));
  await app.register(oauthRoutes(platform));
  await app.register(sourceMapRoutes(platform));
  await app.register(consoleRoutes(await consoleBundle()));
  if (opts.ops) await app.register(opsRoutes(opts.ops));
  for (const plugin of opts.plugins ?? []) await app.register(plugin);

  await app.ready();
  return app;
}
