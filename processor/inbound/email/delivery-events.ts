import { alertRecipientsRepository } from '../../../domain/alert-recipients-repository.ts';
import type { Platform } from '../../../platform/platform.ts';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { obj } from '../payload.ts';

/**
 * Resend's delivery events (`POST /v1/webhooks/email`): `email.bounced` (the recipient's server rejected the mail for
 * good) and `email.complained` (the recipient marked it as spam) put every address of `data.to` on the suppression
 * list, which alert mail skips until someone re-enables the address in error-alert settings. A later event does not
 * lift a suppression on its own (a delivery to another of a message's recipients says nothing about this one).
 * Other delivery events are noted and change nothing.
 */

export async function deliveryEvent(platform: Pick<Platform, 'db' | 'clock'>, e: InboundEvent): Promise<{ outcome: string; drop?: 'unhandled_provider' }> {
  const reason = e.event === 'email.bounced' ? 'bounced' : e.event === 'email.complained' ? 'complained' : undefined;
  if (!reason)
    return e.event.startsWith('email.') && e.event !== 'email.received'
      ? { outcome: `noted ${e.event}` }
      : { outcome: 'not_handled', drop: 'unhandled_provider' };
  const to = obj(e.payload.data)?.to;
  const addresses = (Array.isArray(to) ? to : [to])
    .filter((a): a is string => typeof a === 'string' && a.includes('@') && a.length <= 320)
    .map((a) => a.trim().toLowerCase());
  if (!addresses.length) return { outcome: `${e.event} without recipients` };
  await alertRecipientsRepository.suppress(platform.db, addresses, reason, platform.clock.now(), e.deliveryId);
  return { outcome: `suppressed ${addresses.length} (${reason})` };
}
