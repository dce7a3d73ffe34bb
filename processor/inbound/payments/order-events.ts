import type { Platform } from '../../../platform/platform.ts';
import { publishProjectEvent } from '../../../domain/project-event-publisher.ts';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { paymentsRepository, type OrderRow } from '../repositories/payments-repository.ts';
import { orderStep } from './stripe-orders.ts';

/**
 * A connected account's Stripe event into the project's order.* events (spec §6.1), in an order's own order whatever
 * order Stripe delivered them in:
 *   1. the account names the project that connected it through Stripe (none: dropped as unconnected_account; an
 *      account typed in before Stripe Connect OAuth proves nothing: dropped as needs_reconnecting)
 *   2. the order's row is locked; its step applies: created once; paid once (with created first, if it never came);
 *      refunded once, after paid (a refund that comes first is kept and emitted right after order.paid)
 *   3. each event is published with an id derived from the order (`order.paid:<project>:<pi_...>`), so a re-delivery
 *      that publishes again sends nothing twice
 * `data` of every order event: { orderId, account, amount, currency, customerEmailHash } (amounts in the currency's
 * minor unit, as Stripe gives them), and `amountRefunded` on order.refunded.
 */
export async function orderEvents(
  platform: Pick<Platform, 'db' | 'bus' | 'clock'>,
  e: InboundEvent,
): Promise<{ outcome: string; drop?: 'not_an_order' | 'unconnected_account' | 'needs_reconnecting' }> {
  const step = orderStep(e);
  if (!step) return { outcome: 'not_an_order_step', drop: 'not_an_order' };
  const bound = await paymentsRepository.projectOfAccount(platform.db, step.account);
  if (!bound) return { outcome: 'unconnected_account', drop: 'unconnected_account' };
  if (!bound.proven) return { outcome: 'needs_reconnecting', drop: 'needs_reconnecting' };
  const { projectId } = bound;
  type OrderEventName = 'order.created' | 'order.paid' | 'order.refunded';
  const planned: Array<{ event: OrderEventName; data: Record<string, unknown> }> = [];
  const now = platform.clock.now();
  // 2. decide, in the order row's transaction; publish only once it committed (the embedded store has one
  //    connection, and a consumer of the published event may need it).
  const before = await paymentsRepository.withOrder(platform.db, { projectId, orderId: step.orderId, accountId: step.account }, now, (row) => {
    const next: OrderRow = {
      ...row,
      amount: step.amount ?? row.amount,
      currency: step.currency ?? row.currency,
      customer_email_hash: step.customerEmailHash ?? row.customer_email_hash,
    };
    const data = () => ({
      orderId: step.orderId,
      account: step.account,
      amount: next.amount === null ? null : Number(next.amount),
      currency: next.currency,
      customerEmailHash: next.customer_email_hash,
    });
    const plan = (event: OrderEventName, extra: Record<string, unknown> = {}) => planned.push({ event, data: { ...data(), ...extra } });
    if (!next.created_emitted && step.kind !== 'refunded') {
      plan('order.created');
      next.created_emitted = true;
    }
    if (step.kind === 'paid' && !next.paid_emitted) {
      plan('order.paid');
      next.paid_emitted = true;
      if (next.refund_pending && !next.refunded_emitted) {
        plan('order.refunded', { amountRefunded: next.amount_refunded === null ? null : Number(next.amount_refunded) });
        next.refunded_emitted = true;
        next.refund_pending = false;
      }
    }
    if (step.kind === 'refunded' && !next.refunded_emitted) {
      next.amount_refunded = step.amountRefunded ?? next.amount_refunded;
      if (next.paid_emitted) {
        plan('order.refunded', { amountRefunded: step.amountRefunded });
        next.refunded_emitted = true;
      } else next.refund_pending = true;
    }
    return next;
  });
  // 3. publish; if the bus refuses, the row goes back as it was and the delivery is retried
  try {
    for (const p of planned) await publishProjectEvent(platform, { id: `${p.event}:${projectId}:${step.orderId}`, projectId, event: p.event, data: p.data });
  } catch (err) {
    await paymentsRepository.write(platform.db, before, platform.clock.now());
    throw err;
  }
  return { outcome: planned.length ? planned.map((p) => p.event).join(', ') : step.kind === 'refunded' ? 'refund_kept_until_paid' : 'already_emitted' };
}
