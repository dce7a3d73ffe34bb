import { createHash } from 'node:crypto';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { obj, str, num } from '../payload.ts';

/**
 * A connected account's Stripe event as a step of an order (one order per PaymentIntent). Pure; the payload is read
 * defensively, as a stranger's JSON.
 *   payment_intent.created                 created
 *   payment_intent.succeeded               created (if not yet) and paid
 *   checkout.session.completed (paid)      created and paid
 *   charge.refunded                        refunded (kept until the order is paid: Stripe does not deliver in order)
 *   anything else                          not an order step
 */
export interface OrderStep {
  kind: 'created' | 'paid' | 'refunded';
  account: string;
  orderId: string;
  amount: number | null;
  currency: string | null;
  /** SHA-256 of the lower-cased address: endpoints can match a customer they know without the address itself travelling. */
  customerEmailHash: string | null;
  amountRefunded: number | null;
}

export const emailHash = (email: string | undefined): string | null => (email ? createHash('sha256').update(email.trim().toLowerCase()).digest('hex') : null);

export function orderStep(e: Pick<InboundEvent, 'event' | 'payload'>): OrderStep | undefined {
  const account = str(e.payload.account);
  const o = obj(obj(e.payload.data)?.object);
  if (!account || !o) return undefined;
  const currency = str(o.currency) ?? null;
  switch (e.event) {
    case 'payment_intent.created':
    case 'payment_intent.succeeded': {
      const orderId = str(o.id);
      if (!orderId) return undefined;
      return {
        kind: e.event === 'payment_intent.created' ? 'created' : 'paid',
        account,
        orderId,
        amount: num(o.amount),
        currency,
        customerEmailHash: emailHash(str(o.receipt_email)),
        amountRefunded: null,
      };
    }
    case 'checkout.session.completed': {
      const orderId = str(o.payment_intent);
      if (!orderId || o.payment_status !== 'paid') return undefined;
      return {
        kind: 'paid',
        account,
        orderId,
        amount: num(o.amount_total),
        currency,
        customerEmailHash: emailHash(str(obj(o.customer_details)?.email)),
        amountRefunded: null,
      };
    }
    case 'charge.refunded': {
      const orderId = str(o.payment_intent);
      if (!orderId) return undefined;
      return {
        kind: 'refunded',
        account,
        orderId,
        amount: num(o.amount),
        currency,
        customerEmailHash: emailHash(str(obj(o.billing_details)?.email)),
        amountRefunded: num(o.amount_refunded),
      };
    }
    default:
      return undefined;
  }
}
