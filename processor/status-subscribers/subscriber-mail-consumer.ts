import { isSubscriberEvent, notificationMail } from '../../domain/status-subscribers/subscriber-mail.ts';
import { statusSubscribersRepository } from '../../domain/status-subscribers/status-subscribers-repository.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { ProjectEvent } from '../../schemas/project-events.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { emptySummary, type BatchSummary } from '../batch-summary.ts';
import { startPipelineConsumer, type PipelineConsumer } from '../pipeline-consumer.ts';

/**
 * Mail to status page subscribers (issue 43): the project events topic, as CONSUMER_GROUPS.statusSubscriberMail, in
 * the processor's consumer scaffold (../pipeline-consumer.ts). Per delivery, each event:
 *   1. pick      only uptime.incident.* and uptime.maintenance.* (domain/status-subscribers/subscriber-mail.ts) of a
 *                project's own (not an inbox's, not an alert rule's targeted one); the rest is not ours
 *   2. page      the project still exists (else dropped `unknown_project`)
 *   3. who       its confirmed e-mail subscribers whose address is not suppressed (a bounce or complaint reported by
 *                the mail provider: mail_suppressions, the list alert mail skips), in pages
 *   4. claim     one row per (event, subscriber) (status_subscriber_mails): a re-delivered event mails nobody twice
 *   5. send      one mail per subscriber (its own one-click unsubscribe), a few at a time; a mail the server did not
 *                take gives its claim back and the delivery is retried (those already sent stay claimed)
 * Counted: mails sent (accepted), claims already taken (duplicates). Claims older than the bus keeps messages are pruned.
 */
const PAGE = 200;
const KEEP_CLAIMS_MS = 7 * 86_400_000;

type Reason = 'unknown_project';

export async function startSubscriberMailConsumer(
  platform: Pick<Platform, 'bus' | 'clock' | 'db' | 'logger' | 'mailer' | 'config'>,
): Promise<PipelineConsumer<Reason | 'invalid_message'>> {
  const { db, clock } = platform;
  const logger = platform.logger.child({ component: 'status-subscriber-mail' });

  async function mailEvent(ev: ProjectEvent, summary: BatchSummary<Reason>): Promise<void> {
    // 1. pick
    if (!isSubscriberEvent(ev.event) || ev.inboxId || ev.endpointIds) return;
    // 2. page
    const slug = await statusSubscribersRepository.projectSlug(db, ev.projectId);
    if (!slug) {
      summary.dropped.unknown_project = (summary.dropped.unknown_project ?? 0) + 1;
      return;
    }
    const links = { base: publicBaseUrl(platform.config), slug };
    let after = '';
    let failed: unknown;
    for (;;) {
      // 3. who
      const subscribers = await statusSubscribersRepository.mailable(db, ev.projectId, after, PAGE);
      if (!subscribers.length) break;
      after = subscribers[subscribers.length - 1]!.id;
      for (let i = 0; i < subscribers.length; i += LIMITS.statusSubscribers.mailConcurrency) {
        const chunk = subscribers.slice(i, i + LIMITS.statusSubscribers.mailConcurrency);
        await Promise.all(
          chunk.map(async (s) => {
            // 4. claim
            if (!(await statusSubscribersRepository.claimMail(db, ev.id, s.id, clock.now()))) {
              summary.duplicates++;
              return;
            }
            // 5. send
            try {
              await platform.mailer.send(notificationMail(s.email, links, ev.event as Parameters<typeof notificationMail>[2], ev.data, s.unsubscribe_token));
              summary.accepted++;
            } catch (err) {
              await statusSubscribersRepository.releaseMail(db, ev.id, s.id);
              failed = err;
            }
          }),
        );
      }
      if (subscribers.length < PAGE) break;
    }
    if (failed) {
      logger.warn({ err: failed, event: ev.id }, 'a status subscriber mail was not taken; the event is delivered again');
      throw failed;
    }
  }

  return startPipelineConsumer<ProjectEvent, Reason>(
    { bus: platform.bus, logger },
    {
      name: 'status subscriber mail',
      topic: projectEvents.TOPIC,
      group: CONSUMER_GROUPS.statusSubscriberMail,
      maxInFlight: 1,
      decode: (value) => projectEvents.decode(value),
      async handle(events) {
        const summary = emptySummary<Reason>();
        for (const ev of events) await mailEvent(ev, summary);
        return summary;
      },
      prune: {
        intervalMs: 3_600_000,
        run: async () => {
          await statusSubscribersRepository.pruneMails(db, clock.now() - KEEP_CLAIMS_MS);
          return 0;
        },
      },
    },
  );
}
