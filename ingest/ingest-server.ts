import { createBodyBudget } from './http/body-budget.ts';
import { LIMITS } from '../schemas/limits.ts';
import uWS from 'uWebSockets.js';
import type { Platform } from '../platform/platform.ts';
import * as errorEvents from '../schemas/bus/error-events.ts';
import * as analyticsEvents from '../schemas/bus/analytics-events.ts';
import * as clientItems from '../schemas/bus/client-items.ts';
import { sessionsRoute, SITE_SESSIONS_PATH } from './sessions-route.ts';
import { registerBatchRoute } from './batch-route.ts';
import { createCoalescingPublisher } from './coalescing-publisher.ts';
import { errorsRoute, SITE_ERRORS_PATH } from './errors-route.ts';
import { sentryRoutes } from './sentry/sentry-routes.ts';
import { registerSentryCronRoute } from './sentry/sentry-cron-route.ts';
import { analyticsRoute, SITE_ANALYTICS_PATH } from './analytics-route.ts';
import { startFlagCache } from './flag-cache.ts';
import { registerFlagsRoute } from './flags-route.ts';
import { posthogCaptureRoutes } from './posthog/posthog-capture.ts';
import { registerPostHogFlags } from './posthog/posthog-flags-route.ts';
import { registerPostHogAssets } from './posthog/posthog-assets.ts';

const prefixed = (prefix: string, counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).map(([k, v]) => [`${prefix}_${k}`, v]));
import { buildWidgetAssets, registerWidgetAssets } from './widget-assets.ts';
import type { Forwarder } from './forward.ts';
import { startProjectCache } from './project-cache.ts';
import { createRefusalCounters } from './refusals.ts';
import { registerSingleProcessProxy } from './single-process-proxy.ts';
import { guardedApp } from './http/guarded-app.ts';
import { startKeyUsage, type KeyUsage } from './key-usage.ts';
import { siteServerOf } from '../hosting/serve/site-server.ts';
import type { Ops } from '../platform/ops/ops.ts';
import { registerOpsRoutes } from './ops-routes.ts';

/**
 * The ingest edge (uWebSockets.js): the public batch routes (batch-route.ts): `POST /v1/errors/i`
 * (errors-route.ts) and `POST /v1/analytics/i` (analytics-route.ts), each also on every site's own host under
 * `/service/v1/` (§7.1), Sentry SDKs' envelope and store endpoints (sentry/); flag evaluation, `GET /v1/flags/i`
 * (flags-route.ts, from flag-cache.ts); PostHog's SDKs' capture and flag endpoints (posthog/); the browser client's files under `/v1/w/` (widget-assets.ts); and in
 * single-process mode site hosts and the relay of every other request to the API (single-process-proxy.ts). Per request it does no database I/O: keys, settings and cap state come from
 * the in-memory project cache (project-cache.ts).
 */
export interface IngestServerOptions {
  port: number;
  host?: string;
  /** Single-process mode: relay every other request (e.g. to Fastify's app.inject). */
  forward?: Forwarder;
  /**
   * How accepted batches reach the bus: `coalesced` (default) groups the messages of concurrent
   * requests into one send; `per-request` sends each alone. Only the benchmark sets it, to measure
   * the difference in one run.
   */
  publishMode?: 'coalesced' | 'per-request';
  /** `/livez`, `/readyz`, `/metrics` on this port, and the counts and answer times /metrics shows (platform/ops/). */
  ops?: Ops;
  /** Bytes of large bodies held at once (default LIMITS.largeBodies.totalBytes; http/body-budget.ts). */
  largeBodiesBytes?: number;
}

export interface IngestServer {
  port: number;
  close(): Promise<void>;
  /** Accepted batches and events, and every refusal by reason. */
  stats(): Record<string, number>;
  /** The ingest keys' last use, noted and written once a minute. */
  keyUsage: KeyUsage;
}

export { ERRORS_INGEST_HEALTH_PATH, ERRORS_INGEST_PATH } from './errors-route.ts';

export async function startIngestServer(
  platform: Pick<Platform, 'bus' | 'clock' | 'config' | 'db' | 'disk' | 'logger' | 'limiter'>,
  opts: IngestServerOptions,
): Promise<IngestServer> {
  const log = platform.logger.child({ component: 'ingest' });
  const cache = await startProjectCache(platform);
  const { bus, clock } = platform;
  const publisher =
    opts.publishMode === 'per-request'
      ? { publish: (m: { key?: string; value: Buffer }) => bus.publish(errorEvents.TOPIC, [m]) }
      : createCoalescingPublisher(bus, errorEvents.TOPIC);
  const counters = createRefusalCounters();
  const sentryCounters = createRefusalCounters();
  const analyticsCounters = createRefusalCounters();
  const flagsCounters = createRefusalCounters();
  const app = guardedApp(uWS.App(), log, counters.counts);
  // Which project a site's Host serves (the same-origin path); in the single process also the sites' files.
  const sites = siteServerOf(platform);
  const keyUsage = startKeyUsage(platform);
  const observe = opts.ops && ((route: string, status: number, seconds: number) => opts.ops!.metrics.observeIngestAnswer(route, status, seconds));
  const bodyBudget = createBodyBudget(opts.largeBodiesBytes ?? LIMITS.largeBodies.totalBytes);
  const edge = { app, platform, cache, counters, log, sites, keyUsage, observe, bodyBudget };

  const errors = errorsRoute({ now: () => clock.now(), publish: (m) => publisher.publish(m) });
  const analyticsPublisher = createCoalescingPublisher(bus, analyticsEvents.TOPIC);
  const analytics = analyticsRoute({ now: () => clock.now(), publish: (m) => analyticsPublisher.publish(m) });
  registerBatchRoute({ ...edge, counters: analyticsCounters }, analytics);
  registerBatchRoute({ ...edge, counters: analyticsCounters }, { ...analytics, paths: { path: SITE_ANALYTICS_PATH, siteKeyed: true } });
  registerBatchRoute(edge, errors);
  // §7.1: cx.js on a site posts to its own host; the edge attaches the project's ingest key.
  registerBatchRoute(edge, { ...errors, paths: { path: SITE_ERRORS_PATH, siteKeyed: true } });
  // What SDKs send beside errors (sessions, feedback, check-ins; issue 40): one client-items message per request.
  const itemsPublisher = createCoalescingPublisher(bus, clientItems.TOPIC);
  const publishItems = (m: { key: string; value: Buffer }) => itemsPublisher.publish(m);
  for (const route of sentryRoutes(errors, { publishItems })) registerBatchRoute({ ...edge, counters: sentryCounters }, route);
  const sessionsCounters = createRefusalCounters();
  const sessions = sessionsRoute({ publish: publishItems });
  registerBatchRoute({ ...edge, counters: sessionsCounters }, sessions);
  registerBatchRoute({ ...edge, counters: sessionsCounters }, { ...sessions, paths: { path: SITE_SESSIONS_PATH, siteKeyed: true } });
  // Sentry's HTTP cron check-ins (issue 40): heartbeat monitors of the uptime family, counted with the Sentry routes.
  registerSentryCronRoute({ ...edge, counters: sentryCounters }, { bus });
  const flags = await startFlagCache(platform, { stamp: () => cache.stamp });
  registerFlagsRoute({ ...edge, counters: flagsCounters }, flags);
  // PostHog's SDKs unchanged (posthog/): their capture routes are analytics ingest, their flag routes the same evaluation.
  const posthogCounters = createRefusalCounters();
  for (const route of posthogCaptureRoutes(analytics)) registerBatchRoute({ ...edge, counters: posthogCounters }, route);
  registerPostHogFlags({ ...edge, counters: posthogCounters }, flags);
  // What PostHog's snippet and posthog-js load: posthog-js's own files under /static/ and its remote config (posthog/).
  registerPostHogAssets(edge);
  registerWidgetAssets(app, await buildWidgetAssets());
  if (opts.ops) {
    registerOpsRoutes(app, opts.ops, log);
    const families = {
      errors: counters,
      sentry: sentryCounters,
      sessions: sessionsCounters,
      analytics: analyticsCounters,
      flags: flagsCounters,
      posthog: posthogCounters,
    };
    for (const [family, c] of Object.entries(families)) opts.ops.metrics.addEdgeCounts(family, c.counts);
  }
  // The single process's front door also answers site hosts (platform/sites/), without relaying them to the API.
  registerSingleProcessProxy(app, { forward: opts.forward, sites: opts.forward ? sites : undefined, trustProxy: platform.config.TRUST_PROXY, log });

  const host = opts.host ?? '0.0.0.0';
  const listenSocket = await new Promise<uWS.us_listen_socket>((resolve, reject) => {
    app.listen(host, opts.port, (ls) => (ls ? resolve(ls) : reject(new Error(`ingest edge could not listen on ${host}:${opts.port}`))));
  }).catch((err) => {
    cache.stop();
    flags.stop();
    throw err;
  });
  const port = uWS.us_socket_local_port(listenSocket as unknown as uWS.us_socket);
  log.info({ port }, 'ingest edge listening');

  return {
    port,
    async close() {
      cache.stop();
      flags.stop();
      uWS.us_listen_socket_close(listenSocket);
      await keyUsage.stop();
    },
    keyUsage,
    stats: () => ({
      ...counters.counts,
      ...prefixed('sentry', sentryCounters.counts),
      ...prefixed('sessions', sessionsCounters.counts),
      ...prefixed('analytics', analyticsCounters.counts),
      ...prefixed('flags', flagsCounters.counts),
      ...prefixed('posthog', posthogCounters.counts),
      large_bodies_held_bytes: bodyBudget.used,
    }),
  };
}
