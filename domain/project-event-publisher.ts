import { randomUUID } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import * as projectEvents from '../schemas/bus/project-events.ts';
import type { ProjectEvent } from '../schemas/project-events.ts';

/**
 * The one producer of outbound project events (spec §6.1). Any part of the platform (deploys,
 * payments, users, mailboxes, the webhook test route) calls this; the webhook fan-out consumer
 * (processor/webhooks) delivers it to every subscribed endpoint. Resolves once the bus holds the
 * event durably.
 *
 * - `id` is optional: pass a stable id (e.g. `deploy.succeeded:<deployId>`) to make a retried
 *   publish idempotent; deliveries derive from it, so the same id never sends twice.
 * - `inboxId` (email.received from a mailbox inbox): the event goes only to that inbox's own
 *   webhookUrl, signed with the inbox's secret, never to project endpoints. To also notify the
 *   project's endpoints, publish the event once more without `inboxId`.
 */
export async function publishProjectEvent(
  platform: Pick<Platform, 'bus' | 'clock'>,
  event: Omit<ProjectEvent, 'id' | 'occurredAt'> & { id?: string },
): Promise<ProjectEvent> {
  const full: ProjectEvent = { ...event, id: event.id ?? `evt_${randomUUID().replace(/-/g, '')}`, occurredAt: platform.clock.now() };
  await platform.bus.publish(projectEvents.TOPIC, [{ key: full.projectId, value: projectEvents.encode(full) }]);
  return full;
}
