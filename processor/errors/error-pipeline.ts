/**
 * The error pipeline: what happens to a batch of error events the edge put on the bus. The consumer
 * (error-consumer.ts) decodes the bus messages and hands the stamped batches here.
 *
 *  1. flatten      the batches' events; an event id seen twice in one delivery counts once
 *  2. scrub        secrets out of the free-text fields and the context (issue 40), before anything is stored;
 *                  then a browser event's contexts from its User-Agent where the SDK sent none (context-step.ts)
 *  3. symbolicate  minified frames through the project's kept source maps to their original file, line and
 *                  function, with context lines (issue 37); the stack as sent is kept beside it
 *  4. fingerprint  name + message without numbers + first in-app frame -> fingerprint and group id
 *  5. environment  server-side stamping from the project's domains or deploys (unknown project: drop)
 *  then in ONE Postgres transaction:
 *  6. redirect     group ids merged into another issue (issue 41) become that issue's: one read for the batch's ids,
 *                  under its projects' merge locks held shared to the commit (a merge waits for the batch, or the
 *                  batch for the merge and then reads its redirects; repositories/merges-repository.ts)
 *     claim        every event id in the ledger, written as accepted: ids already there were consumed
 *                  by an earlier delivery and change nothing
 *  7. lock         the usage rows the batch counts against, then its existing groups (this order in every
 *                  processor: concurrent batches of one project queue, and see each other's new groups)
 *  8. caps         monthly and open-group caps (drop: monthly_cap / open_groups_cap), usage counters
 *  9. group        fold the accepted events into their groups: counts, samples, status, regressions;
 *                  the ledger records every drop with its reason; alert mail is claimed
 *  after the commit:
 * 10. occurrence   ClickHouse rows for every accepted event of the batch, including events accepted by an
 *                  earlier delivery (read back from the ledger): heals a crash between the commit and this
 * 11. alert        send the claimed mails, detached: mail never fails or blocks the batch; and issue.created /
 *                  issue.regressed for the groups this delivery created or reopened (issue-notifications.ts); and the
 *                  alert rules of projects that wrote theirs (../alerts/evaluate-rules.ts; step 9 claims §7.6's mail
 *                  only for projects that did not)
 *
 * Every event not stored is counted by reason (BatchSummary.dropped, outcome.ts's DropReason), and what symbolication
 * did by name (BatchSummary.counted). SQL lives in
 * the repositories (repositories/): steps say the rules.
 *
 * The handler resolves only after step 10; the bus commits the offsets after that.
 */
import type { Clock } from '../../platform/clock.ts';
import { ITEMS_PER_TURN, yieldToEventLoop } from '../../platform/event-loop.ts';
import type { Logger } from '../../platform/logger.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Mailer } from '../../platform/ports/mailer.ts';
import type { RelationalStore } from '../../platform/ports/relational-store.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { clientEventIdOf } from './client-event-id.ts';
import { groupsRepository } from './repositories/groups-repository.ts';
import { ledgerRepository, type LedgerDrop } from './repositories/ledger-repository.ts';
import { mergesRepository } from './repositories/merges-repository.ts';
import { usageRepository } from './repositories/usage-repository.ts';
import type { IssueNotifier } from './issue-notifications.ts';
import type { AlertRuleEvaluation } from '../alerts/evaluate-rules.ts';
import { createAlertStep } from './steps/alert-step.ts';
import { createContextStep } from './steps/context-step.ts';
import { createCapsStep, usageBucketOf, type ErrorCaps } from './steps/caps-step.ts';
import { createEnvironmentStep } from './steps/environment-step.ts';
import { createFingerprintStep } from './steps/fingerprint-step.ts';
import { createGroupStep } from './steps/group-step.ts';
import { createOccurrenceStep, occurrenceRow } from './steps/occurrence-step.ts';
import type { DropReason, EnvironmentStampedEvent, FingerprintedEvent, IncomingEvent } from './steps/outcome.ts';
import { createScrubStep } from './steps/scrub-step.ts';
import { createSymbolicateStep } from './steps/symbolicate-step.ts';
import type { ParsedMaps } from './symbolication/parsed-maps.ts';
import type { BatchSummary as SharedBatchSummary } from '../batch-summary.ts';

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
  /** SITES_DOMAIN: the platform's own hosts of each project stamp environments too (platform/sites/platform-hosts.ts). */
  sitesDomain?: string;
  /** Parsed source maps, shared by the pipelines of one process; a new cache of LIMITS.sourceMaps.cacheBytes by default. */
  parsedMaps?: ParsedMaps;
  /** Defaults to LIMITS.sourceMaps.coldBytesPerBatch; tests pass small numbers. */
  coldBytesPerBatch?: number;
  /** issue.* project events after the commit (issue-notifications.ts); none without it. */
  issueNotifier?: IssueNotifier;
  /** Alert rules (issue 41, processor/alerts/evaluate-rules.ts) after the commit; only the default rule's §7.6 mail without it. */
  alertRules?: Pick<AlertRuleEvaluation, 'afterBatch'>;
}

/** What one delivery did: accepted, duplicates (consumed by an earlier delivery), dropped by DropReason. */
export type BatchSummary = SharedBatchSummary<DropReason>;

export interface ErrorPipeline {
  handleBatch(batches: StampedErrorBatch[]): Promise<BatchSummary>;
  /** Resolves when every alert mail started so far has been handed over (or failed and was logged). */
  idle(): Promise<void>;
}

export function createErrorPipeline(deps: ErrorPipelineDeps): ErrorPipeline {
  const ledger = ledgerRepository;
  const groups = groupsRepository;
  const usage = usageRepository;
  const scrubStep = createScrubStep();
  const contextStep = createContextStep();
  const symbolicateStep = createSymbolicateStep({
    db: deps.db,
    sitesDomain: deps.sitesDomain,
    maps: deps.parsedMaps,
    coldBytesPerBatch: deps.coldBytesPerBatch,
  });
  const fingerprintStep = createFingerprintStep();
  const environmentStep = createEnvironmentStep({ db: deps.db, clock: deps.clock, sitesDomain: deps.sitesDomain });
  const capsStep = createCapsStep({ caps: deps.caps, usage, groups });
  const groupStep = createGroupStep({ groups });
  const occurrenceStep = createOccurrenceStep({ analytics: deps.analytics });
  const alertStep = createAlertStep({ mailer: deps.mailer, clock: deps.clock, logger: deps.logger, publicBaseUrl: deps.publicBaseUrl, groups });
  const mailing = new Set<Promise<void>>();

  async function handleBatch(batches: StampedErrorBatch[]): Promise<BatchSummary> {
    const summary: BatchSummary = { accepted: 0, duplicates: 0, dropped: {} };
    const countDrop = (r: DropReason) => (summary.dropped[r] = (summary.dropped[r] ?? 0) + 1);

    // 1. flatten; an event id seen twice in one delivery counts once.
    const seen = new Set<string>();
    const incoming: IncomingEvent[] = [];
    for (const b of batches) {
      for (const event of b.events) {
        if (seen.has(event.eventId)) continue;
        seen.add(event.eventId);
        incoming.push(
          b.userAgent === undefined
            ? { projectId: b.projectId, originHost: b.originHost, receivedAt: b.receivedAt, event }
            : { projectId: b.projectId, originHost: b.originHost, receivedAt: b.receivedAt, event, userAgent: b.userAgent },
        );
      }
    }
    if (!incoming.length) return summary;

    // 2. scrub: pure, per event. A drop here is recorded with the others below.
    const preDropped = new Map<string, DropReason>();
    const scrubbed: IncomingEvent[] = [];
    for (const [i, e] of incoming.entries()) {
      if (i && i % ITEMS_PER_TURN === 0) await yieldToEventLoop();
      const s = scrubStep(e);
      if (s.kind === 'drop') preDropped.set(e.event.eventId, s.reason);
      else scrubbed.push(contextStep(s.value, e.userAgent));
    }

    // 3. symbolicate: the batch's frames through their source maps (no query when no frame could have one).
    const counted: Record<string, number> = {};
    const symbolicated = await symbolicateStep(scrubbed, counted);
    if (Object.keys(counted).length) summary.counted = counted;

    // 4. fingerprint: pure, per event.
    const fingerprinted: FingerprintedEvent[] = [];
    for (const [i, e] of symbolicated.entries()) {
      if (i && i % ITEMS_PER_TURN === 0) await yieldToEventLoop();
      const fp = fingerprintStep(e);
      if (fp.kind === 'drop') preDropped.set(e.event.eventId, fp.reason);
      else fingerprinted.push(fp.value);
    }

    // 5. environment: two reads for the whole batch.
    const stamped: EnvironmentStampedEvent[] = [];
    (await environmentStep(fingerprinted)).forEach((o, i) => {
      if (o.kind === 'ok') stamped.push(o.value);
      else preDropped.set(fingerprinted[i]!.event.eventId, o.reason);
    });
    const stampedById = new Map(stamped.map((e) => [e.event.eventId, e]));

    const { alertClaims, accepted, earlier, changes } = await deps.db.transaction(async (tx) => {
      // 6. redirect: first in the transaction, so the merge lock is held from the read to the commit.
      const redirects = await mergesRepository.redirects(
        tx,
        stamped.map((e) => e.projectId),
        [...new Set(stamped.map((e) => e.groupId))],
      );
      for (const e of stamped) e.groupId = redirects.get(e.groupId) ?? e.groupId;
      // claim
      const claimed = await ledger.claim(
        tx,
        incoming.map((e) => {
          const s = stampedById.get(e.event.eventId);
          return {
            eventId: e.event.eventId,
            projectId: e.projectId,
            groupId: s?.groupId ?? null,
            environment: s?.environment ?? null,
            clientEventId: clientEventIdOf(e.event),
          };
        }),
      );
      summary.duplicates = incoming.length - claimed.size;
      const fresh = stamped.filter((e) => claimed.has(e.event.eventId));
      // 7. lock: usage rows, then existing groups
      const acceptedSoFar = await usage.lock(tx, fresh.map(usageBucketOf));
      const prior = await groups.lockPrior(tx, [...new Set(fresh.map((e) => e.groupId))]);
      // 8. caps
      const accepted: EnvironmentStampedEvent[] = [];
      const drops: LedgerDrop[] = [];
      (await capsStep(tx, fresh, { acceptedSoFar, prior })).forEach((o, i) => {
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
      // 9. group, ledger drops, alert claims
      const changes = await groupStep(tx, accepted, prior);
      await ledger.recordDrops(tx, drops);
      const alertClaims = await alertStep.claimAlerts(tx, changes);
      // Accepted by an earlier delivery: their ClickHouse rows are written again (step 10).
      const redelivered = fingerprinted.filter((e) => !claimed.has(e.event.eventId));
      const before = await ledger.acceptedEarlier(
        tx,
        redelivered.map((e) => e.event.eventId),
      );
      const earlier = redelivered.flatMap((e) => {
        const l = before.get(e.event.eventId);
        return l ? [occurrenceRow({ ...e, groupId: l.groupId }, l.environment)] : [];
      });
      return { alertClaims, accepted, earlier, changes };
    });
    summary.accepted = accepted.length;

    // 10. occurrence: after the commit. A failure throws, the bus re-delivers, and the ledger turns
    // the re-delivery into "rewrite the same rows".
    const rows = earlier;
    for (const [i, e] of accepted.entries()) {
      if (i && i % ITEMS_PER_TURN === 0) await yieldToEventLoop();
      rows.push(occurrenceRow(e, e.environment));
    }
    await occurrenceStep(rows);

    // 11. alert: detached.
    if (alertClaims.length) track(alertStep.sendAlerts(deps.db, alertClaims));
    if (deps.issueNotifier) track(deps.issueNotifier(changes, accepted));
    if (deps.alertRules) track(deps.alertRules.afterBatch(changes, accepted));
    return summary;
  }

  function track(p: Promise<void>) {
    mailing.add(p);
    void p.finally(() => mailing.delete(p));
  }

  return {
    handleBatch,
    async idle() {
      while (mailing.size) await Promise.allSettled([...mailing]);
    },
  };
}
