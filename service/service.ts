/**
 * Composition root: chooses adapters (platform.ts) and starts one role or all. `npm start` runs
 * every role in one process on the embedded defaults; `tsx service/main.ts <ingest|processor|api>`
 * runs one role, which needs the production adapters (the embedded engines are single-process).
 *
 * Start order matters in one process: the processor subscribes before the edge accepts traffic, so
 * the in-process bus always has its consumers.
 */
import { ConfigError, DISTRIBUTED_REQUIRED, ROLE_BACKENDS, type Config, type Role, publicBaseUrl } from '../platform/config.ts';
import { type Logger } from '../platform/logger.ts';
import { createPlatform, type Platform, type PlatformOverrides } from '../platform/platform.ts';
import { bootstrapInstance } from './bootstrap.ts';
import { buildApiApp } from '../api/app.ts';
import { startErrorConsumer } from '../processor/errors/error-consumer.ts';
import { startAnalyticsConsumer } from '../processor/analytics/analytics-consumer.ts';
import { startClientItemsConsumer } from '../processor/client-items/client-items-consumer.ts';
import { startWebhookDispatcher } from '../processor/webhooks/webhook-dispatcher.ts';
import { startInboundConsumer } from '../processor/inbound/inbound-consumer.ts';
import { startGithubStatusSweep } from '../processor/github-status/github-status-sweep.ts';
import { startUptimeMonitor } from '../processor/uptime/uptime-monitor.ts';
import { startSubscriberMailConsumer } from '../processor/status-subscribers/subscriber-mail-consumer.ts';
import { startIssueTriageSweep } from '../processor/errors/issue-triage-sweep.ts';
import { createAlertRuleEvaluation } from '../processor/alerts/evaluate-rules.ts';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { injectForwarder } from '../ingest/forward.ts';
import { startBuilder } from '../builder/deploy-builder.ts';
import { prebuiltDeployer, prebuiltRefusals } from '../builder/prebuilt-deploy.ts';
import { signupOutcomes } from '../api/status-subscribers/status-subscriber-routes.ts';
import { opsOfRole } from '../platform/ops/ops.ts';
import { startOpsServer } from '../platform/ops/ops-server.ts';
import { ROUTES } from '../schemas/api/route-table.ts';

export const ROLES: Role[] = ['all', 'ingest', 'processor', 'api', 'builder'];

export interface Running {
  platform: Platform;
  /** The port HTTP answers on: the edge's or the API's; the processor's and the builder's serve only /livez, /readyz, /metrics. */
  port?: number;
  stop(): Promise<void>;
}

/** Refuse a split role on embedded adapters: they cannot be shared between processes. */
export function checkRoleConfig(role: Role, config: Config): void {
  if (role === 'all') return;
  const missing = DISTRIBUTED_REQUIRED[role].filter((k) => !config[k]);
  if (missing.length) {
    throw new ConfigError(`role "${role}" runs alone only on the production adapters; set ${missing.join(', ')}`);
  }
}

/**
 * Tests and benches only: nothing here is reachable from configuration (env). (Runs sharing one Kafka cluster keep
 * apart with BUS_NAME_SUFFIX, a setting like any other.)
 */
export interface StartOptions {
  testing?: {
    /** Builds' lease (tests shorten it to see builder_lost quickly). */
    buildLeaseMs?: number;
    /** Don't print the first start's credentials (tests and benches that print JSON on stdout). */
    quietFirstStart?: boolean;
    /** The webhook retry sweep's period (tests shorten it to see a replay delivered). */
    webhookSweepIntervalMs?: number;
    overrides?: PlatformOverrides;
    /** false: no uptime monitor in this process (tests that run their own with a manual clock). */
    uptime?: false;
  };
}

export async function start(role: Role, config: Config, logger: Logger, opts: StartOptions = {}): Promise<Running> {
  checkRoleConfig(role, config);
  const t = opts.testing ?? {};
  const platform = await createPlatform(config, logger, t.overrides, {
    backends: ROLE_BACKENDS[role],
    command: role === 'all' ? `npm start (every role, port ${config.PORT})` : `the ${role} role (port ${config.PORT})`,
    // A builder keeps artifacts under DATA_DIR even when every port is on its server.
    writesDataDir: role === 'all' || role === 'builder',
  });
  if (config.ALLOW_LOCAL_OUTBOUND)
    logger.warn('ALLOW_LOCAL_OUTBOUND is on: webhook endpoints and uptime monitors may be http:// and loopback (development only)');
  const stops: Array<() => Promise<void>> = [];
  let port: number | undefined;
  // /livez, /readyz and /metrics on the role's port (the edge's in npm start); one registry for every role started here.
  const ops = opsOfRole(platform, role);

  try {
    // The first start's credentials are printed last, once everything listens, so nothing scrolls them away.
    let created: Awaited<ReturnType<typeof bootstrapInstance>> = null;
    if (role === 'all' || role === 'api') created = await bootstrapInstance(platform);
    if (role === 'all' || role === 'processor') {
      const errors = await startErrorConsumer(platform);
      stops.push(() => errors.stop());
      // Ignore-until times and escalation (issue 41), every minute; escalating issues go through the alert rules.
      const alertRules = createAlertRuleEvaluation({ ...platform, publicBaseUrl: publicBaseUrl(platform.config) });
      const triage = startIssueTriageSweep(platform, { onEscalating: alertRules.evaluateEscalation });
      stops.push(() => triage.stop());
      const analytics = await startAnalyticsConsumer(platform);
      const inbound = await startInboundConsumer(platform);
      stops.push(() => inbound.stop());
      const items = await startClientItemsConsumer(platform);
      stops.push(() => items.stop());
      stops.push(() => analytics.stop());
      const webhooks = await startWebhookDispatcher(platform, { sweepIntervalMs: t.webhookSweepIntervalMs });
      stops.push(() => webhooks.stop());
      // Mail of incident and maintenance events to status page subscribers (issue 43).
      const subscriberMail = await startSubscriberMailConsumer(platform);
      stops.push(() => subscriberMail.stop());
      ops.metrics.addPipeline('status_subscriber_mail', () => subscriberMail.stats());
      const githubStatus = startGithubStatusSweep(platform);
      stops.push(() => githubStatus.stop());
      ops.metrics.addGithubReports(() => githubStatus.stats());
      ops.metrics.addPipeline('errors', () => errors.stats());
      ops.metrics.addPipeline('analytics', () => analytics.stats());
      ops.metrics.addPipeline('inbound', () => inbound.stats());
      ops.metrics.addPipeline('client_items', () => items.stats());
      ops.metrics.addWebhookAttempts(() => webhooks.stats());
      if (t.uptime !== false) {
        const uptime = await startUptimeMonitor(platform);
        stops.push(() => uptime.stop());
      }
    }
    if (role === 'all' || role === 'builder') {
      const builder = await startBuilder(platform, { leaseMs: t.buildLeaseMs });
      stops.push(() => builder.stop());
      ops.metrics.addBuilds(() => builder.stats());
      ops.metrics.addGuardedRollout(() => builder.guard.stats());
    }
    const api = role === 'all' || role === 'api' ? await buildApiApp(platform, { ops, deployPrebuilt: prebuiltDeployer(platform) }) : undefined;
    if (api) ops.metrics.addPrebuiltRefusals(() => prebuiltRefusals);
    if (api) ops.metrics.addStatusSignups(() => signupOutcomes(platform));
    if (api) stops.push(() => api.close());
    if (role === 'all' || role === 'ingest') {
      const edge = await startIngestServer(platform, {
        port: config.PORT,
        host: config.HOST,
        forward: api ? injectForwarder(api) : undefined,
        ops,
      });
      port = edge.port;
      stops.push(() => edge.close());
    } else if (api) {
      await api.listen({ port: config.PORT, host: config.HOST });
      const addr = api.server.address();
      port = typeof addr === 'object' && addr ? addr.port : config.PORT;
    } else {
      // The processor and the builder serve no traffic: a small server of their own answers the operator's routes.
      const server = await startOpsServer(ops, { port: config.PORT, host: config.HOST, logger });
      port = server.port;
      stops.push(() => server.close());
    }
    logger.info({ role, port }, 'service started');
    if (created && !t.quietFirstStart) printFirstStart(config, created);
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await platform.close();
    throw err;
  }

  return {
    platform,
    port,
    async stop() {
      // Stop taking traffic first, then consumers, then the stores.
      for (const stop of stops.reverse()) await stop().catch((err) => logger.warn({ err }, 'stop failed'));
      await platform.close();
    },
  };
}

function printFirstStart(config: Config, c: NonNullable<Awaited<ReturnType<typeof bootstrapInstance>>>): void {
  const base = publicBaseUrl(config);
  // Printed to stdout once, on the very first start; these secrets are never shown again.
  process.stdout.write(
    [
      '',
      '================ first start: save these now, they are shown once ================',
      `sign in:          POST ${base}${ROUTES.signIn.path}  {"email":"${c.email}","password":"${c.password}"}`,
      `demo project:     ${c.projectSlug}`,
      `ingest key:       ${c.ingestKey}`,
      `Sentry DSN:       ${c.dsn}   (the same key, for Sentry SDKs)`,
      `project API key:  ${c.apiKey}   (every scope)`,
      '===================================================================================',
      '',
    ].join('\n'),
  );
}
