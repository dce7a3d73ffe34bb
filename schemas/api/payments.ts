import { z } from 'zod';

/** `/v1/projects/:slug/payments` (spec §4.1): the Stripe accounts whose payments become the project's order.* events. */
export const PaymentAccountSchema = z.object({
  accountId: z.string().describe('the connected Stripe account, `acct_...`'),
  connectedAt: z.string(),
});
export type PaymentAccount = z.infer<typeof PaymentAccountSchema>;
export const ConnectPaymentAccountBody = z.object({ accountId: z.string().regex(/^acct_[A-Za-z0-9]{1,64}$/, 'a Stripe account id, acct_...') }).strict();
export const PaymentAccountAnswer = z.object({ account: PaymentAccountSchema });
export type PaymentAccountAnswer = z.infer<typeof PaymentAccountAnswer>;
export const PaymentAccountList = z.object({ accounts: z.array(PaymentAccountSchema) });
export type PaymentAccountList = z.infer<typeof PaymentAccountList>;
export const PaymentAccountParams = z.object({ slug: z.string(), accountId: z.string().max(80) });
