import type { Platform } from '../../platform/platform.ts';
import { queueDeploy } from '../../domain/deploys/queue-deploy.ts';
import * as inboundEvents from '../../schemas/bus/inbound-events.ts';
import { BranchSchema } from '../../schemas/deploys.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import type { BatchSummary } from '../batch-summary.ts';
import { startPipelineConsumer, type PipelineConsumer } from '../pipeline-consumer.ts';
import { codeHostIntent } from './code-host/github-events.ts';
import { codeHostRepository } from './repositories/code-host-repository.ts';
import { githubStatusRepository } from '../github-status/repositories/github-status-repository.ts';
import { inboundRepository } from './repositories/inbound-repository.ts';
import { orderEvents } from './payments/order-events.ts';
import { ACCOUNT_DEAUTHORIZED, accountDeauthorized } from './payments/account-deauthorized.ts';
import { recordBillingEvent } from './payments/billing-ledger.ts';
import { deliveryEvent } from './email/delivery-events.ts';
import { receivedMail, type ReceivedMailDrop } from './email/received-mail.ts';
import { resendRawMessage } from './email/resend-raw-message.ts';

/**
 * The inbound pipeline: verified provider deliveries (api/inbound/, schemas/bus/inbound-events.ts) in the processor's
 * consumer scaffold (../pipeline-consumer.ts), one delivery at a time:
 *   1. act      by provider (every action is idempotent, so a redelivered message may act again harmlessly):
 *                 github   a push or pull request of a connected repository (by installation and repository id) queues
 *                          a deploy of each connected project, exactly as a deploy hook does (domain/deploys/queue-deploy.ts:
 *                          production for the default branch, preview otherwise; a busy production slot or a queued
 *                          preview is taken as it is), once per (repository id, ref, head commit) whatever the delivery
 *                          id; each deploy queued is linked to its commit (and pull request) for its commit status and
 *                          comment (../github-status/); a pull request opened on a commit already deployed links its
 *                          number to that deploy; the app uninstalled or a repository removed from it unbinds its connections
 *                 stripe_connect  a connected account's payment events become the project's order.* events
 *                          (payments/order-events.ts); account.application.deauthorized unbinds the account
 *                          (payments/account-deauthorized.ts)
 *                 stripe   the platform's own billing events into the billing ledger (payments/billing-ledger.ts)
 *                 resend   bounces and complaints suppress alert mail to those addresses (email/delivery-events.ts);
 *                          mail to a mailbox inbox becomes email.received (email/received-mail.ts)
 *   2. mark     processed, with the outcome; the delivery that marks it first counts it, a redelivery is a duplicate
 * At least once: a redelivery (a crash before the offset was committed) acts again, which the actions' own rules make
 * harmless: a queued preview is returned, not doubled; order events carry ids derived from the order; the billing
 * ledger is keyed by Stripe's event id. Counted once: only the delivery that marks it first counts it.
 */
export type InboundDropReason =
  | 'invalid_message'
  | 'unconnected_repository'
  | 'duplicate_push'
  | 'not_a_deploy'
  | 'unhandled_provider'
  | 'not_an_order'
  | 'unconnected_account'
  | 'needs_reconnecting'
  | 'not_a_billing_event'
  | ReceivedMailDrop;

const PRUNE_MS = 10 * 60_000;
/** Pushes are remembered 90 days: a replayed old push (GitHub's signature carries no time) queues nothing in that time. */
const PUSH_KEEP_MS = 90 * 24 * 60 * 60_000;

export async function startInboundConsumer(
  platform: Pick<Platform, 'bus' | 'clock' | 'db' | 'logger' | 'txt' | 'config' | 'outbound'>,
): Promise<PipelineConsumer<InboundDropReason>> {
  const { db, bus, clock } = platform;
  const logger = platform.logger.child({ component: 'inbound-pipeline' });
  const { RESEND_API_KEY, RESEND_API_URL } = platform.config;
  const fetchRaw = RESEND_API_KEY ? resendRawMessage({ apiKey: RESEND_API_KEY, apiUrl: RESEND_API_URL, guard: platform.outbound }) : undefined;

  async function act(e: inboundEvents.InboundEvent): Promise<{ outcome: string; drop?: InboundDropReason }> {
    if (e.provider === 'stripe_connect') return e.event === ACCOUNT_DEAUTHORIZED ? accountDeauthorized(platform, e) : orderEvents(platform, e);
    if (e.provider === 'stripe') return recordBillingEvent(platform, e);
    if (e.provider === 'resend') return e.event === 'email.received' ? receivedMail({ ...platform, logger }, e, fetchRaw) : deliveryEvent(platform, e);
    if (e.provider !== 'github') return { outcome: 'not_handled', drop: 'unhandled_provider' };
    const intent = codeHostIntent(e);
    if (intent.kind === 'nothing') return { outcome: intent.why, drop: 'not_a_deploy' };
    if (intent.kind === 'unbind') return { outcome: `unbound: ${await codeHostRepository.unbind(db, intent.installationId, intent.repositoryIds)}` };
    if (!BranchSchema.safeParse(intent.branch).success) return { outcome: 'bad_branch_name', drop: 'not_a_deploy' };
    // Only the app's deliveries name an installation; bindings are by installation and repository id.
    const projects = intent.installationId === null ? [] : await codeHostRepository.projectsOf(db, intent.repositoryId, intent.installationId);
    if (!projects.length) return { outcome: 'unconnected', drop: 'unconnected_repository' };
    // A pull request opened on a commit its push already deployed: that deploy's links learn the number (its comment).
    if (intent.sha && intent.prNumber !== null && Number.isSafeInteger(intent.prNumber))
      await githubStatusRepository.notePullRequest(db, intent.repositoryId, intent.sha, intent.prNumber, clock.now());
    if (intent.sha) {
      const push = { repositoryId: intent.repositoryId, ref: intent.ref, sha: intent.sha, deliveryId: e.deliveryId, now: clock.now() };
      if (!(await codeHostRepository.claimPush(db, push))) return { outcome: 'duplicate_push', drop: 'duplicate_push' };
    }
    const outcomes: string[] = [];
    for (const p of projects) {
      try {
        const q = await queueDeploy(db, bus, { projectId: p.projectId, branch: intent.branch, trigger: 'push', triggerId: intent.sha, now: clock.now() });
        outcomes.push(q.deduplicated ? 'deduplicated' : 'queued');
        // The deploy's commit status and pull-request comment (processor/github-status/): the outbox row the sweep reads.
        if (intent.sha && /^[0-9a-f]{40}$/i.test(intent.sha) && intent.installationId !== null) {
          const prNumber = intent.prNumber !== null && Number.isSafeInteger(intent.prNumber) ? intent.prNumber : null;
          const link = {
            deployId: q.deploy.id,
            projectId: p.projectId,
            repoId: intent.repositoryId,
            installationId: intent.installationId,
            headSha: intent.sha,
          };
          await githubStatusRepository.link(db, { ...link, prNumber, now: clock.now() });
        }
      } catch (err) {
        // A production deploy already queued or building takes the push's commit when it clones: nothing to retry.
        if (err instanceof ServiceError && (err.code === 'production_deploy_busy' || err.code === 'not_found')) outcomes.push(err.code);
        else throw err;
      }
    }
    return { outcome: `deploys: ${outcomes.join(', ')}` };
  }

  return startPipelineConsumer<inboundEvents.InboundEvent, InboundDropReason>(
    { bus, logger },
    {
      name: 'inbound pipeline',
      topic: inboundEvents.TOPIC,
      group: CONSUMER_GROUPS.inboundPipeline,
      maxInFlight: 1,
      decode: (value) => inboundEvents.decode(value),
      async handle(events): Promise<BatchSummary<InboundDropReason>> {
        const summary: BatchSummary<InboundDropReason> = { accepted: 0, duplicates: 0, dropped: {} };
        for (const e of events) {
          // 1. act
          const r = await act(e);
          // 2. mark
          if (!(await inboundRepository.markProcessed(db, e.provider, e.deliveryId, r.outcome, clock.now()))) {
            summary.duplicates++;
            continue;
          }
          if (r.drop) summary.dropped[r.drop] = (summary.dropped[r.drop] ?? 0) + 1;
          else summary.accepted++;
          logger.info({ provider: e.provider, event: e.event, deliveryId: e.deliveryId, outcome: r.outcome }, 'inbound delivery handled');
        }
        return summary;
      },
      prune: {
        intervalMs: PRUNE_MS,
        run: async () =>
          (await inboundRepository.pruneOlderThan(db, new Date(clock.now() - LIMITS.inbound.dedupeKeepMs), 10_000)) +
          (await codeHostRepository.prunePushes(db, new Date(clock.now() - PUSH_KEEP_MS), 10_000)),
      },
    },
  );
}
