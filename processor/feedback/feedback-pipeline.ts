/**
 * The feedback pipeline (issue 40): user feedback from Sentry's SDKs (`feedback` items of the widget and
 * captureFeedback, legacy `user_report`), as the client-items consumer hands it over (schemas/bus/client-items.ts).
 *
 *  1. flatten      the feedback of every message with its project, origin and receive time; an item id seen twice in
 *                  one delivery counts once (a duplicate)
 *  2. scrub        message, name, e-mail and URL by the error events' rules (steps/scrub-step.ts); a blank message is
 *                  dropped (feedback_empty_message)
 *  3. environment  stamped by the server (§7.4, processor/environment/): the request's origin, else the release as a
 *                  deploy id or git sha; a project that no longer exists is dropped (feedback_unknown_project)
 *  4. link         the issue of the event it names, when this project stored it (steps/link-step.ts). Feedback can
 *                  arrive before its event: it is stored unlinked, shown linked as soon as the event is stored (the
 *                  read path joins the error ledger, api/feedback/feedback-repository.ts), and the link is copied
 *                  onto it by the background pass (feedback-retention.ts) within 10 minutes
 *  5. store        one row per project and feedback id: an id stored before (a re-delivery, an SDK's retry) is a
 *                  duplicate and changes nothing
 *
 * Every item not stored is counted by reason, under the family's prefix (`feedback_...`).
 */
import type { FeedbackItem } from '../../schemas/bus/client-items.ts';
import type { BatchSummary } from '../batch-summary.ts';
import type { ClientItemsHandler, ClientItemsPlatform } from '../client-items/client-items-consumer.ts';
import { createEnvironmentResolver } from '../environment/environment-resolver.ts';
import { feedbackStoreRepository, type FeedbackRow } from './repositories/feedback-store-repository.ts';
import { linkStep } from './steps/link-step.ts';
import { scrubFeedback, type ScrubDropReason } from './steps/scrub-step.ts';

export type FeedbackDropReason = ScrubDropReason | 'feedback_unknown_project';

interface Incoming {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  item: FeedbackItem;
}

/** A release that is a git sha names the deploy by its sha, as the Sentry edge reads an event's release. */
const GIT_SHA = /^[0-9a-f]{7,40}$/i;

export function createFeedbackHandler(platform: ClientItemsPlatform): ClientItemsHandler {
  const resolveEnvironments = createEnvironmentResolver({ db: platform.db, clock: platform.clock, sitesDomain: platform.config.SITES_DOMAIN });

  return async function handleFeedback(messages): Promise<BatchSummary<FeedbackDropReason>> {
    const summary: BatchSummary<FeedbackDropReason> = { accepted: 0, duplicates: 0, dropped: {} };
    const countDrop = (r: FeedbackDropReason) => (summary.dropped[r] = (summary.dropped[r] ?? 0) + 1);

    // 1. flatten
    const seen = new Set<string>();
    const incoming: Incoming[] = [];
    for (const m of messages) {
      for (const item of m.feedback ?? []) {
        const key = `${m.projectId}\n${item.id}`;
        if (seen.has(key)) {
          summary.duplicates++;
          continue;
        }
        seen.add(key);
        incoming.push({ projectId: m.projectId, originHost: m.originHost, receivedAt: m.receivedAt, item });
      }
    }
    if (!incoming.length) return summary;

    // 2. scrub
    const scrubbed: Incoming[] = [];
    for (const e of incoming) {
      const s = scrubFeedback(e.item);
      if (s.kind === 'drop') countDrop(s.reason);
      else scrubbed.push({ ...e, item: s.value });
    }

    // 3. environment
    const environments = await resolveEnvironments(
      scrubbed.map((e) => {
        const release = e.item.release;
        return { projectId: e.projectId, originHost: e.originHost, deployId: release, gitSha: release && GIT_SHA.test(release) ? release : undefined };
      }),
    );
    const stamped: Array<Incoming & { environment: string }> = [];
    scrubbed.forEach((e, i) => {
      const environment = environments[i];
      if (environment) stamped.push({ ...e, environment });
      else countDrop('feedback_unknown_project');
    });
    if (!stamped.length) return summary;

    // 4. link
    const issues = await linkStep(
      platform.db,
      stamped.map((e) => ({ projectId: e.projectId, eventId: e.item.eventId })),
    );

    // 5. store
    const rows = stamped.map((e, i): FeedbackRow => {
      const it = e.item;
      return {
        project_id: e.projectId,
        id: it.id,
        source: it.source,
        event_id: it.eventId ?? null,
        group_id: issues[i] ?? null,
        environment: e.environment,
        name: it.name ?? null,
        email: it.email ?? null,
        message: it.message,
        url: it.url ?? null,
        release: it.release ?? null,
        client_time: isoOrNull(it.timestamp),
        received_at: new Date(e.receivedAt).toISOString(),
      };
    });
    const inserted = await feedbackStoreRepository.insert(platform.db, rows);
    summary.accepted = inserted.size;
    summary.duplicates += rows.length - inserted.size;
    return summary;
  };
}

/** A client's time as ISO, or null when it is no time Postgres can hold. */
function isoOrNull(ms: number): string | null {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1970 || d.getUTCFullYear() > 9999 ? null : d.toISOString();
}
