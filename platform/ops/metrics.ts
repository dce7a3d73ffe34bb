import type { DiskSpaceState } from '../data-dir/disk-space.ts';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { BusLag } from '../ports/bus.ts';
import type { PoolUse } from '../ports/relational-store.ts';

/**
 * What `GET /metrics` shows (prom-client, the Prometheus text format). Every name is here, once; the README lists
 * them ("Health and metrics"). Two kinds of source:
 *
 * - counts the roles already keep for themselves (the edge's refusals, the pipelines' totals, webhook attempts,
 *   builds), read when Prometheus scrapes: nothing on a request's path changes for them;
 * - the two latency histograms, observed as answers go out (the edge's routes and the API's, by route pattern).
 *
 * The process's own metrics (CPU, memory, GC, event-loop lag: prom-client's defaults, unprefixed as every Node
 * service names them) are collected once per process; the service's (prefixed `service_`) once per started service,
 * which is one per process outside tests (`npm start` runs every role with one).
 */
export interface ServiceMetrics {
  readonly contentType: string;
  /** The text exposition: the process's metrics and this service's. */
  render(): Promise<string>;
  /** One edge answer: its route (the registered path, never the request's URL), status and time since it arrived. */
  observeIngestAnswer(route: string, status: number, seconds: number): void;
  /** One API answer: its method, route pattern (`/v1/projects/:slug`; unmatched requests share one label), status, time. */
  observeApiAnswer(method: string, route: string, status: number, seconds: number): void;
  /**
   * An edge route family's counts (ingest/refusals.ts): `accepted_batches`, `accepted_events`, `dropped_<reason>`,
   * `handler_threw` and one per refusal reason. The object is read at every scrape.
   */
  addEdgeCounts(family: string, counts: Readonly<Record<string, number>>): void;
  /** A processor pipeline's totals since start (processor/batch-summary.ts). */
  addPipeline(pipeline: string, totals: () => PipelineTotals): void;
  /** Webhook delivery attempts by outcome since start (processor/webhooks/). */
  addWebhookAttempts(counts: () => Readonly<Record<string, number>>): void;
  /** What the processor's GitHub reports did since start, by outcome (processor/github-status/: status_set, github_failed, ...). */
  addGithubReports(counts: () => Readonly<Record<string, number | undefined>>): void;
  /** Builds finished by this process since start (builder/). */
  addBuilds(counts: () => BuildTotals): void;
  /** Guarded rollout's verdicts taken by this builder since start (builder/guarded-rollout/). */
  addGuardedRollout(counts: () => GuardedRolloutTotals): void;
  /** Prebuilt uploads this API process refused since start, by reason (builder/prebuilt-deploy.ts). */
  addPrebuiltRefusals(counts: () => Readonly<Record<string, number | undefined>>): void;
  /** Status page sign-ups this API process answered since start, by outcome (api/status-subscribers/). */
  addStatusSignups(counts: () => Readonly<Record<string, number | undefined>>): void;
  /** Messages each consumer group of this process has yet to process (the bus port's lag). */
  addBusLag(lag: () => Promise<BusLag[]>): void;
  /** The relational store's connection pool (Postgres; PGlite has none). */
  addDbPool(use: () => PoolUse): void;
  /** DATA_DIR's free space as the disk watch last read it (platform/data-dir/disk-space.ts). */
  addDiskSpace(state: () => DiskSpaceState): void;
}

export interface PipelineTotals {
  accepted: number;
  duplicates: number;
  dropped: Partial<Record<string, number>>;
  counted?: Record<string, number>;
}

/** Verdicts by outcome; degraded deploys by why they were not rolled back (not_opted_in, no_previous_deploy, no_longer_live). */
export interface GuardedRolloutTotals {
  healthy: number;
  rolled_back: number;
  superseded: number;
  degraded: Partial<Record<string, number>>;
}

export interface BuildTotals {
  ready: number;
  canceled: number;
  /** By failure reason (schemas/deploys.ts). */
  failed: Partial<Record<string, number>>;
}

/** Edge answers are fast (no database on the request's path): buckets from 1 ms to 5 s. */
const INGEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const API_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

let processRegistry: Registry | undefined;

/** prom-client's default metrics, once per process: their event-loop and GC observers cannot be removed. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

type Labels<L extends string> = Partial<Record<L, string>>;

export function createServiceMetrics(): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];

  /**
   * A counter whose values are the sources' own totals, read at scrape time. The sources only ever count up, so the
   * series are counters as Prometheus means them (a restart starts them over, which rate() expects).
   */
  function countedFrom<L extends string>(name: string, help: string, labelNames: readonly L[]) {
    const sources: Array<() => Iterable<[Labels<L>, number]>> = [];
    return (read: () => Iterable<[Labels<L>, number]>) => {
      sources.push(read);
      // Registered with the first source, so a role shows only its own metrics.
      if (sources.length === 1)
        new Counter<L>({
          name,
          help,
          labelNames,
          registers,
          collect() {
            this.reset();
            for (const source of sources) for (const [labels, value] of source()) this.inc(labels, value);
          },
        });
    };
  }

  /** A histogram registered at its first observation, so a role shows only its own. */
  function timedBy<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) {
    const histogram = new Histogram<L>({ name, help, labelNames, buckets, registers: [] });
    let registered = false;
    return (labels: Labels<L>, seconds: number) => {
      if (!registered) {
        registered = true;
        registry.registerMetric(histogram);
      }
      histogram.observe(labels, seconds);
    };
  }

  const ingestAnswers = timedBy(
    'service_ingest_answer_seconds',
    'Time from a request reaching an ingest route of the edge to its answer, by route and status',
    ['route', 'code'],
    INGEST_BUCKETS,
  );
  const apiAnswers = timedBy(
    'service_api_request_seconds',
    'Time the API took to answer, by method, route pattern and status',
    ['method', 'route', 'code'],
    API_BUCKETS,
  );

  const edgeAccepted = countedFrom('service_ingest_accepted_total', 'Batches and events the edge accepted (2xx), by route family', ['family', 'unit']);
  const edgeRefusals = countedFrom('service_ingest_refusals_total', 'Requests the edge refused, by route family and reason (schemas/edge-refusals.ts)', [
    'family',
    'reason',
  ]);
  const edgeDropped = countedFrom('service_ingest_dropped_total', 'Items of accepted requests taken and not kept, by route family and reason', [
    'family',
    'reason',
  ]);
  const pipelineEvents = countedFrom('service_pipeline_events_total', 'Events the processor pipelines handled, by pipeline and outcome', [
    'pipeline',
    'outcome',
  ]);
  const pipelineDropped = countedFrom('service_pipeline_dropped_total', 'Events the processor pipelines dropped, by pipeline and reason', [
    'pipeline',
    'reason',
  ]);
  const pipelineCounted = countedFrom(
    'service_pipeline_counted_total',
    "What a pipeline's steps did besides keeping or dropping events, by pipeline and name (errors: source map frames resolved, unresolved_<reason>, map_refused_<reason>)",
    ['pipeline', 'name'],
  );
  const webhookAttempts = countedFrom('service_webhook_attempts_total', 'Webhook delivery attempts by outcome', ['outcome']);
  const githubReports = countedFrom('service_github_reports_total', 'Commit statuses and pull-request comments sent to GitHub (or not), by outcome', [
    'outcome',
  ]);
  const builds = countedFrom('service_builds_total', 'Builds this builder finished, by outcome and failure reason', ['outcome', 'reason']);
  const guarded = countedFrom(
    'service_guarded_rollout_total',
    "Guarded rollout's verdicts on production deploys, by outcome; degraded ones by why they were not rolled back",
    ['outcome', 'reason'],
  );

  const prebuiltRefusals = countedFrom(
    'service_prebuilt_refusals_total',
    'Prebuilt uploads (POST .../deploys/prebuilt) refused, by reason: what the archive held, a limit, a busy production slot',
    ['reason'],
  );
  const statusSignups = countedFrom(
    'service_status_signups_total',
    'Sign-ups on status pages (their public subscribe route), by outcome: mailed, or why not (a limit, suppressed, subscribed already, ...)',
    ['outcome'],
  );

  return {
    get contentType() {
      return registry.contentType;
    },
    async render() {
      return Registry.merge([processMetrics(), registry]).metrics();
    },
    observeIngestAnswer: (route, status, seconds) => ingestAnswers({ route, code: String(status) }, seconds),
    observeApiAnswer: (method, route, status, seconds) => apiAnswers({ method, route, code: String(status) }, seconds),
    addEdgeCounts(family, counts) {
      const entries = () => Object.entries(counts);
      edgeAccepted(function* () {
        yield [{ family, unit: 'batches' }, counts.accepted_batches ?? 0];
        yield [{ family, unit: 'events' }, counts.accepted_events ?? 0];
      });
      edgeRefusals(function* () {
        for (const [key, n] of entries()) if (!key.startsWith('accepted_') && !key.startsWith('dropped_')) yield [{ family, reason: key }, n];
      });
      edgeDropped(function* () {
        for (const [key, n] of entries()) if (key.startsWith('dropped_')) yield [{ family, reason: key.slice('dropped_'.length) }, n];
      });
    },
    addPipeline(pipeline, totals) {
      pipelineEvents(function* () {
        const t = totals();
        yield [{ pipeline, outcome: 'accepted' }, t.accepted];
        yield [{ pipeline, outcome: 'duplicate' }, t.duplicates];
        let dropped = 0;
        for (const n of Object.values(t.dropped)) dropped += n ?? 0;
        yield [{ pipeline, outcome: 'dropped' }, dropped];
      });
      pipelineDropped(function* () {
        for (const [reason, n] of Object.entries(totals().dropped)) yield [{ pipeline, reason }, n ?? 0];
      });
      pipelineCounted(function* () {
        for (const [name, n] of Object.entries(totals().counted ?? {})) yield [{ pipeline, name }, n];
      });
    },
    addWebhookAttempts(counts) {
      webhookAttempts(function* () {
        for (const [outcome, n] of Object.entries(counts())) yield [{ outcome }, n];
      });
    },
    addGithubReports(counts) {
      githubReports(function* () {
        for (const [outcome, n] of Object.entries(counts())) yield [{ outcome }, n ?? 0];
      });
    },
    addBuilds(counts) {
      builds(function* () {
        const c = counts();
        yield [{ outcome: 'ready', reason: '' }, c.ready];
        yield [{ outcome: 'canceled', reason: '' }, c.canceled];
        for (const [reason, n] of Object.entries(c.failed)) yield [{ outcome: 'failed', reason }, n ?? 0];
      });
    },
    addGuardedRollout(counts) {
      guarded(function* () {
        const c = counts();
        for (const outcome of ['healthy', 'rolled_back', 'superseded'] as const) yield [{ outcome, reason: '' }, c[outcome]];
        for (const [reason, n] of Object.entries(c.degraded)) yield [{ outcome: 'degraded', reason }, n ?? 0];
      });
    },
    addPrebuiltRefusals(counts) {
      prebuiltRefusals(function* () {
        for (const [reason, n] of Object.entries(counts())) yield [{ reason }, n ?? 0];
      });
    },
    addStatusSignups(counts) {
      statusSignups(function* () {
        for (const [outcome, n] of Object.entries(counts())) yield [{ outcome }, n ?? 0];
      });
    },
    addBusLag(lag) {
      new Gauge<'topic' | 'group'>({
        name: 'service_bus_lag_messages',
        help: 'Messages published to a topic that a consumer group of this process has not processed yet',
        labelNames: ['topic', 'group'],
        registers,
        async collect() {
          this.reset();
          // A bus that cannot tell now (Kafka away, past the adapter's timeout) leaves the series out of this scrape.
          const lags = await lag().catch(() => []);
          for (const l of lags) this.set({ topic: l.topic, group: l.group }, l.messages);
        },
      });
    },
    addDbPool(use) {
      const gauge = (name: string, help: string, value: (u: PoolUse) => number) =>
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(value(use()));
          },
        });
      gauge('service_db_pool_connections', 'Connections the Postgres pool holds (busy and idle)', (u) => u.total);
      gauge('service_db_pool_idle_connections', 'Connections of the Postgres pool not in use', (u) => u.idle);
      gauge('service_db_pool_waiting_queries', 'Queries waiting for a connection of the Postgres pool', (u) => u.waiting);
    },
    addDiskSpace(state) {
      new Gauge({
        name: 'service_data_dir_free_bytes',
        help: "DATA_DIR's free bytes at the disk watch's last check (absent before the first, or when unreadable)",
        registers,
        collect() {
          this.reset();
          const free = state().freeBytes;
          if (free !== null) this.set(free);
        },
      });
      new Gauge({
        name: 'service_data_dir_low',
        help: '1 while DATA_DIR is below DATA_DIR_MIN_FREE_MB or a write failed for want of space: ingest, API writes and builds are refused',
        registers,
        collect() {
          this.set(state().low ? 1 : 0);
        },
      });
    },
  };
}
