/**
 * The error pipeline: what happens to a batch of error events the edge put on the bus.
 *
 *  1. decode     the bus messages (ErrorBatchMessage JSON); an undecodable message is logged and skipped
 *  2. scrub      secrets out of name, message, stack, path and extra, before anything is stored
 *  3. fingerprint  name + message without numbers + first in-app frame -> fingerprint and group id
 *  4. environment  server-side stamping from the project's domains or deploys (unknown project: drop)
 *  then in ONE Postgres transaction:
 *  5. claim      every event id in error_events_consumed (ON CONFLICT DO NOTHING), written as accepted:
 *                ids already there were consumed by an earlier delivery and change nothing
 *  6. caps       monthly and open-group caps (drop: monthly_cap / open_groups_cap), usage counters
 *  7. group      upsert the groups: counts, env counts, samples, status and regressions
 *     ledger     mark the events caps or an unknown project dropped (with the reason)
 *     alert      claim alert mail for new production issues and production regressions
 *  after the commit:
 *  8. occurrence insert ClickHouse rows for every accepted event of the batch, including events
 *                accepted by an earlier delivery (read back from the ledger): heals a crash between
 *                the commit and this insert
 *  9. alert      send the claimed mails, detached: mail never fails or blocks the batch
 *
 * The ledger remembers event ids for the re-delivery window only (7 days, ledger-retention.ts).
 *
 * The handler resolves only after step 8; the bus commits the offsets after that. A batch that fails for
 * its content (not a transient failure) is narrowed down to the events no store will take, which are set
 * aside as `unprocessable` (poison-isolation.ts), so one bad event cannot stall its partition.
 */
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Logger } from '../../platform/logger.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { ConsumedMessage, Subscription } from '../../platform/ports/bus.ts';
import type { Mailer } from '../../platform/ports/mailer.ts';
import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { decodeErrorBatchMessage, type ErrorBatchMessage, type StampedErrorEvent } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { CONSUMER_GROUPS, TOPICS } from '../../schemas/topics.ts';
import { createAlertStep } from './steps/alert-step.ts';
import { createCapsStep, type ErrorCaps } from './steps/caps-step.ts';
import { createEnvironmentStep } from './steps/environment-step.ts';
import { createFingerprintStep } from './steps/fingerprint-step.ts';
import { createGroupStep } from './steps/group-step.ts';
import { createOccurrenceStep, occurrenceRow } from './steps/occurrence-step.ts';
import type { DropReason, FingerprintedEvent, IncomingEvent, StampedEvent } from './steps/outcome.ts';
import { createScrubStep } from './steps/scrub-step.ts';
import { schedulePruning } from './ledger-retention.ts';
import { handleIsolatingPoison } from './poison-isolation.ts';

export interface ErrorPipelineDeps {
  db: RelationalStore;
  analytics: AnalyticalStore;
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
  /** Base of the issue links in alert mail. */
  publicBaseUrl: string;
  /** Defaults to LIMITS.errorCaps; tests pass small numbers. */
  caps?: ErrorCaps;
}

export interface BatchSummary {
  accepted: number;
  /** Events of this delivery that an earlier delivery already consumed. */
  duplicates: number;
  /** `unprocessable`: events no store would take, set aside so the partition goes on (poison-isolation.ts). */
  dropped: Partial<Record<DropReason | 'invalid_message' | 'unprocessable', number>>;
}

export interface ErrorPipeline {
  handleBatch(messages: ErrorBatchMessage[]): Promise<BatchSummary>;
  /** Resolves when every alert mail started so far has been handed over (or failed and was logged). */
  idle(): Promise<void>;
}

export function createErrorPipeline(deps: ErrorPipelineDeps): ErrorPipeline {
  const scrubStep = createScrubStep();
  const fingerprintStep = createFingerprintStep();
  const environmentStep = createEnvironmentStep({ db: deps.db, clock: deps.clock });
  const capsStep = createCapsStep({ caps: deps.caps ?? LIMITS.errorCaps });
  const groupStep = createGroupStep();
  const occurrenceStep = createOccurrenceStep({ analytics: deps.analytics });
  const alertStep = createAlertStep({ mailer: deps.mailer, clock: deps.clock, logger: deps.logger, publicBaseUrl: deps.publicBaseUrl });
  const mailing = new Set<Promise<void>>();

  async function handleBatch(messages: ErrorBatchMessage[]): Promise<BatchSummary> {
    const summary: BatchSummary = { accepted: 0, duplicates: 0, dropped: {} };
    const countDrop = (r: DropReason) => (summary.dropped[r] = (summary.dropped[r] ?? 0) + 1);

    // 1. decode (done by the consumer) and flatten; an event id seen twice in one delivery counts once.
    const seen = new Set<string>();
    const incoming: IncomingEvent[] = [];
    for (const m of messages) {
      for (const event of m.events) {
        if (seen.has(event.eventId)) continue;
        seen.add(event.eventId);
        incoming.push({ projectId: m.projectId, originHost: m.originHost, receivedAt: m.receivedAt, event: withDefaults(event) });
      }
    }
    if (!incoming.length) return summary;

    // 2-3. scrub -> fingerprint: pure, per event.
    const fingerprinted: FingerprintedEvent[] = [];
    for (const e of incoming) {
      const scrubbed = scrubStep(e);
      if (scrubbed.kind === 'drop') continue;
      const fp = fingerprintStep(scrubbed.value);
      if (fp.kind === 'ok') fingerprinted.push(fp.value);
    }

    // 4. environment: two reads for the whole batch.
    const envOutcomes = await environmentStep(fingerprinted);
    const stamped: StampedEvent[] = [];
    const preDropped = new Map<string, DropReason>();
    envOutcomes.forEach((o, i) => {
      if (o.kind === 'ok') stamped.push(o.value);
      else preDropped.set(fingerprinted[i]!.event.eventId, o.reason);
    });

    const { alertClaims, accepted, earlier } = await deps.db.transaction(async (tx) => {
      // 5. claim
      const claimed = await claimEvents(tx, fingerprinted, new Map(stamped.map((e) => [e.event.eventId, e])));
      const fresh = stamped.filter((e) => claimed.has(e.event.eventId));
      // 6. caps
      const { outcomes: capOutcomes, priorGroups } = await capsStep(tx, fresh);
      const accepted: StampedEvent[] = [];
      const drops: DropRow[] = [];
      capOutcomes.forEach((o, i) => {
        const e = fresh[i]!;
        if (o.kind === 'ok') accepted.push(o.value);
        else {
          countDrop(o.reason);
          drops.push({ event_id: e.event.eventId, drop_reason: o.reason, environment: e.environment });
        }
      });
      for (const [eventId, reason] of preDropped) {
        if (!claimed.has(eventId)) continue;
        countDrop(reason);
        drops.push({ event_id: eventId, drop_reason: reason, environment: null });
      }
      // 7. group, ledger, alert claims
      const changes = await groupStep(tx, accepted, priorGroups);
      await recordDrops(tx, drops);
      const alertClaims = await alertStep.claimAlerts(tx, changes);
      summary.duplicates = fingerprinted.length - claimed.size;
      const earlier = await readEarlierAccepted(tx, fingerprinted.filter((e) => !claimed.has(e.event.eventId)));
      return { alertClaims, accepted, earlier };
    });
    summary.accepted = accepted.length;

    // 8. occurrence: after the commit. A failure throws, the bus re-delivers, and the ledger turns
    // the re-delivery into "rewrite the same rows".
    await occurrenceStep([...accepted.map((e) => occurrenceRow(e, e.environment)), ...earlier]);

    // 9. alert: detached.
    if (alertClaims.length) track(alertStep.sendAlerts(deps.db, alertClaims));
    return summary;
  }

  function track(p: Promise<void>) {
    mailing.add(p);
    void p.finally(() => mailing.delete(p));
  }

  /**
   * Claim every event id in the ledger, written once as `accepted` with its group and environment
   * (what almost every event turns out to be); the few that caps or an unknown project drop are
   * updated in the same transaction (recordDrops), so no committed row is ever left `accepted` wrongly.
   */
  async function claimEvents(tx: Queryable, unordered: FingerprintedEvent[], stampedById: Map<string, StampedEvent>): Promise<Set<string>> {
    // A fixed order, so two processors claiming overlapping ids (a re-delivery racing the
    // original) wait on each other instead of deadlocking.
    const events = [...unordered].sort((a, b) => (a.event.eventId < b.event.eventId ? -1 : a.event.eventId > b.event.eventId ? 1 : 0));
    const r = await tx.query<{ event_id: string }>(
      `INSERT INTO error_events_consumed (event_id, project_id, outcome, group_id, environment)
       SELECT id, project, 'accepted', grp, env FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(id, project, grp, env)
       ON CONFLICT (event_id) DO NOTHING RETURNING event_id`,
      [
        events.map((e) => e.event.eventId),
        events.map((e) => e.projectId),
        events.map((e) => stampedById.get(e.event.eventId)?.groupId ?? null),
        events.map((e) => stampedById.get(e.event.eventId)?.environment ?? null),
      ],
    );
    return new Set(r.rows.map((x) => x.event_id));
  }

  async function readEarlierAccepted(tx: Queryable, events: FingerprintedEvent[]) {
    if (!events.length) return [];
    const r = await tx.query<{ event_id: string; group_id: string; environment: string }>(
      `SELECT event_id, group_id, environment FROM error_events_consumed WHERE event_id = ANY($1::text[]) AND outcome = 'accepted'`,
      [events.map((e) => e.event.eventId)],
    );
    const byId = new Map(r.rows.map((x) => [x.event_id, x]));
    return events
      .filter((e) => byId.has(e.event.eventId))
      .map((e) => {
        const l = byId.get(e.event.eventId)!;
        return occurrenceRow({ ...e, groupId: l.group_id }, l.environment);
      });
  }

  return {
    handleBatch,
    async idle() {
      while (mailing.size) await Promise.allSettled([...mailing]);
    },
  };
}

interface DropRow {
  event_id: string;
  drop_reason: string;
  environment: string | null;
}

async function recordDrops(tx: Queryable, rows: DropRow[]): Promise<void> {
  if (!rows.length) return;
  await tx.query(
    `UPDATE error_events_consumed c SET outcome = 'dropped', drop_reason = x.drop_reason, group_id = NULL, environment = x.environment
       FROM jsonb_to_recordset($1::jsonb) AS x(event_id text, drop_reason text, environment text)
      WHERE c.event_id = x.event_id`,
    [JSON.stringify(rows)],
  );
}

function withDefaults(e: StampedErrorEvent): StampedErrorEvent {
  // Events the edge stamped (envelope v2) have every default already: no copy.
  if (e.name && typeof e.message === 'string' && typeof e.stack === 'string' && e.runtime && e.truncated) return e;
  return { ...e, name: e.name || 'Error', message: e.message ?? '', stack: e.stack ?? '', runtime: e.runtime ?? 'browser', truncated: e.truncated ?? [] };
}

/**
 * Two batches at once: one's Postgres and ClickHouse waits overlap the other's CPU steps. Safe
 * because nothing depends on batch order: counts are increments, the ledger and occurrence rows are
 * keyed by event id, and rows are locked in id order (so concurrent batches wait, never deadlock),
 * as with several processors. Measured in bench/README.md ("Whole path").
 */
const BATCHES_IN_FLIGHT = 2;

export interface StartErrorPipelineOptions {
  /** Defaults to LIMITS.errorCaps. */
  caps?: ErrorCaps;
  /** Defaults to TOPICS.errorEvents; tests sharing one Kafka cluster use a topic of their own. */
  topic?: string;
  /** Defaults to CONSUMER_GROUPS.errorPipeline. */
  consumerGroup?: string;
  /** Defaults to BATCHES_IN_FLIGHT; the bench sets 1 to measure the difference. */
  batchesInFlight?: number;
  /** How often the consumed-events ledger is pruned (ledger-retention.ts); false: never (tests). */
  ledgerPruneIntervalMs?: number | false;
}

/**
 * Start consuming TOPICS.errorEvents as CONSUMER_GROUPS.errorPipeline; an undecodable message is logged
 * and skipped, never retried. The returned subscription's stop() also waits for alert mails in flight.
 */
export async function startErrorPipeline(platform: Platform, opts: StartErrorPipelineOptions = {}): Promise<Subscription> {
  const logger = platform.logger.child({ component: 'error-pipeline' });
  const pipeline = createErrorPipeline({
    db: platform.db,
    analytics: platform.analytics,
    mailer: platform.mailer,
    clock: platform.clock,
    logger,
    publicBaseUrl: publicBaseUrl(platform.config),
    caps: opts.caps,
  });
  const sub = await platform.bus.subscribe(opts.topic ?? TOPICS.errorEvents, opts.consumerGroup ?? CONSUMER_GROUPS.errorPipeline, async (messages: ConsumedMessage[]) => {
    const batches: ErrorBatchMessage[] = [];
    for (const m of messages) {
      const decoded = decodeErrorBatchMessage(m.value);
      if (decoded) batches.push(decoded);
      else logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason: 'invalid_message' }, 'undecodable error batch skipped');
    }
    const summary = await handleIsolatingPoison(pipeline, batches, logger);
    logger.debug(summary, 'error batch processed');
  }, { maxInFlight: opts.batchesInFlight ?? BATCHES_IN_FLIGHT });
  const pruning = opts.ledgerPruneIntervalMs === false ? undefined : schedulePruning(platform.db, logger, opts.ledgerPruneIntervalMs);
  return {
    async stop() {
      await pruning?.stop();
      await sub.stop();
      await pipeline.idle();
    },
  };
}
