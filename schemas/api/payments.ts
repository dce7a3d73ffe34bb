import { z } from 'zod';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { ROUTES } from './route-table.ts';
import { routeShapes } from './route-shape.ts';

/**
 * `/v1/projects/:slug/payments` (spec §4.1): the Stripe accounts whose payments become the project's order.* events.
 * An account is connected only through Stripe's own consent (Connect OAuth): `POST .../payments/connect` answers the
 * URL to send the browser to, and Stripe sends it back to `GET /v1/payments/connect/callback`.
 */
export const PaymentAccountStatusSchema = z
  .enum(['connected', 'needs_reconnecting'])
  .describe(
    "connected: bound by Stripe's token exchange, its payments become order events. needs_reconnecting: typed in before Stripe Connect OAuth (issue 38), never proven; its events are dropped until the account is connected through Stripe",
  );
export const PaymentAccountSchema = z.object({
  accountId: z.string().describe('the connected Stripe account, `acct_...`'),
  status: PaymentAccountStatusSchema,
  livemode: z.boolean().nullable().describe("whether Stripe connected the account's live mode; null for an account typed in before"),
  connectedAt: z.string(),
});
export type PaymentAccount = z.infer<typeof PaymentAccountSchema>;
export const PaymentAccountList = z.object({ accounts: z.array(PaymentAccountSchema) });
export type PaymentAccountList = z.infer<typeof PaymentAccountList>;
export const PaymentAccountParams = z.object({ slug: z.string(), accountId: z.string().max(80) });

/** `POST /v1/projects/:slug/payments/connect`: where to send the browser (Stripe's consent page), with a one-use state. */
export const StartPaymentConnectAnswer = z.object({
  url: z.string().describe("Stripe's /oauth/authorize with the platform's client id, the callback and a one-use state bound to this session"),
  expiresAt: z.string().describe('the state is refused after this'),
});
export type StartPaymentConnectAnswer = z.infer<typeof StartPaymentConnectAnswer>;

/**
 * `GET /v1/payments/connect/callback`: what Stripe sends the browser back with (a code, or an error), and the state.
 * The route reads state, code and error; Stripe adds its own (`scope` beside the code, `error_description` beside an
 * error), so the rest pass through unread: the account is only ever the one Stripe's token exchange names.
 */
export const PaymentConnectCallbackQuery = z
  .object({
    state: z.string().min(1).max(200),
    code: z.string().max(500).optional(),
    error: z.string().max(200).optional(),
    error_description: z.string().max(2000).optional(),
  })
  .passthrough();

/**
 * Why a connect flow that came back with a valid state did not bind the account: the console page it lands on reads
 * `?stripe_error=<this>`. access_denied: declined on Stripe's page; refused: Stripe refused the code; exchange_failed:
 * Stripe could not be reached or answered nonsense; account_taken: the account is connected to another project.
 */
export const PaymentConnectFailureSchema = z.enum(['access_denied', 'refused', 'exchange_failed', 'account_taken']);
export type PaymentConnectFailure = z.infer<typeof PaymentConnectFailureSchema>;

const tags = ['payments'];

export const paymentRoutes = routeShapes({
  connectPayments: {
    tags,
    summary: "Start connecting a Stripe account: Stripe's consent URL, to open in this browser",
    params: SlugParams,
    response: { 201: StartPaymentConnectAnswer, ...errorAnswers(404, 503) },
  },
  paymentsCallback: {
    tags,
    summary: "Stripe's return after the consent page: binds the account Stripe names, then redirects (303) to the project's Integrations page",
    querystring: PaymentConnectCallbackQuery,
    response: { ...errorAnswers(400, 404, 503) },
  },
  addPaymentAccount: {
    tags,
    summary: `Refused (issue 38): a typed account id proves nothing; connect through ${ROUTES.connectPayments.method} ${ROUTES.connectPayments.path}`,
    deprecated: true,
    params: SlugParams,
    response: { ...errorAnswers(403, 404) },
  },
  listPaymentAccounts: {
    tags,
    summary: "The project's Stripe accounts; needs_reconnecting ones feed nothing until connected through Stripe",
    params: SlugParams,
    response: { 200: PaymentAccountList },
  },
  disconnectPaymentAccount: {
    tags,
    summary: "Disconnect a Stripe account: its events are dropped from now on, and the platform's access to it is revoked at Stripe",
    params: PaymentAccountParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
});
