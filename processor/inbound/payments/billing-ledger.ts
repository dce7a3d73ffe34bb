import type { Platform } from '../../../platform/platform.ts';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { obj, str, num } from '../payload.ts';
import { billingRepository } from '../repositories/billing-repository.ts';

/**
 * The platform's own Stripe billing events (`POST /v1/webhooks/payments`) into the billing ledger (billing_ledger,
 * migration 0019), which `GET /v1/billing` reads. Which project an event is about: `metadata.project` (the project's
 * id or slug) on the invoice or subscription, as the platform sets it when it creates the subscription; an event
 * without one is kept with no project. Recorded:
 *   invoice.paid, invoice.payment_failed                            status paid / failed, amount, currency
 *   customer.subscription.created, .updated, .deleted               status (active, past_due, canceled, ...), plan
 * Anything else is not a billing event. Out of order is harmless: the ledger keeps every event with Stripe's own time,
 * and the summary reads the newest of each kind.
 */

const TYPES = new Set([
  'invoice.paid',
  'invoice.payment_failed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
]);

export async function recordBillingEvent(
  platform: Pick<Platform, 'db' | 'clock'>,
  e: InboundEvent,
): Promise<{ outcome: string; drop?: 'not_a_billing_event' }> {
  const o = obj(obj(e.payload.data)?.object);
  if (!TYPES.has(e.event) || !o) return { outcome: 'not_a_billing_event', drop: 'not_a_billing_event' };
  const ref = str(obj(o.metadata)?.project) ?? str(obj(obj(o.subscription_details)?.metadata)?.project);
  const invoice = e.event.startsWith('invoice.');
  const item = obj((o.items as { data?: unknown[] } | undefined)?.data?.[0]);
  const price = obj(item?.price);
  const plan = invoice ? null : (str(price?.nickname) ?? str(price?.lookup_key) ?? str(price?.id) ?? str(obj(o.plan)?.id) ?? null);
  const status = invoice ? (e.event === 'invoice.paid' ? 'paid' : 'failed') : (str(o.status) ?? (e.event.endsWith('.deleted') ? 'canceled' : null));
  const amount = invoice ? num(e.event === 'invoice.paid' ? o.amount_paid : o.amount_due) : null;
  const createdSec = num(e.payload.created);
  await billingRepository.record(platform.db, {
    eventId: e.deliveryId,
    projectRef: ref ?? null,
    type: e.event,
    status,
    plan,
    amount,
    currency: str(o.currency) ?? null,
    occurredAt: createdSec === null ? e.receivedAt : createdSec * 1000,
    recordedAt: platform.clock.now(),
  });
  return { outcome: `recorded ${e.event}${ref ? '' : ' (no project)'}` };
}
