import type { Platform } from '../../../platform/platform.ts';
import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { str } from '../payload.ts';
import { paymentsRepository } from '../repositories/payments-repository.ts';

/**
 * `account.application.deauthorized` (a Connect event, signed by Stripe): the account's owner disconnected the platform
 * in their Stripe dashboard. The proof the binding stood on is withdrawn, so the binding goes: the account's events
 * feed no project until someone connects it through Stripe again. Idempotent (a redelivery finds nothing to remove).
 */
export const ACCOUNT_DEAUTHORIZED = 'account.application.deauthorized';

export async function accountDeauthorized(
  platform: Pick<Platform, 'db'>,
  e: Pick<InboundEvent, 'payload'>,
): Promise<{ outcome: string; drop?: 'unconnected_account' }> {
  const account = str(e.payload.account);
  if (!account || !(await paymentsRepository.unbind(platform.db, account))) return { outcome: 'unconnected_account', drop: 'unconnected_account' };
  return { outcome: 'account_unbound' };
}
