import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { routePath } from '../../schemas/api/client.ts';
import type { PaymentAccount, PaymentConnectFailure } from '../../schemas/api/payments.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { paymentAccountsRepository as accounts, type PaymentAccountRow } from './payment-accounts-repository.ts';
import { stripeConnectOAuth, type StripeConnectOAuth } from './stripe-connect-oauth.ts';

/**
 * `/v1/projects/:slug/payments` (spec §4.1, "connected payment accounts"; console session only, like other money
 * settings). A Stripe account's events, sent by Stripe Connect to `POST /v1/webhooks/payments/connect`, become the
 * project's order.created, order.paid and order.refunded events; so an account is bound only on Stripe's word that the
 * signed-in member controls it (issue 38), never from an id someone types:
 *   1. start     POST .../payments/connect: a one-use state (ten minutes; only its hash is kept) bound to this session,
 *                this member and this project, and Stripe's consent URL carrying it
 *   2. callback  Stripe returns the browser to GET /v1/payments/connect/callback with a code (or an error) and the
 *                state. The state must be this session's, unused and unexpired (else 400 invalid_state, JSON: a forged
 *                or replayed link binds nothing); it is used up at once. The member must still be one; the code is
 *                exchanged with the platform's secret key, and the account is the exchange's `stripe_user_id`
 *   3. the browser goes back to the project's Integrations page with `?stripe=connected` or `?stripe_error=<why>`
 * An account feeds one project: one another project connected through Stripe stays there (account_taken). A row
 * typed in before this flow proves nothing: it feeds no project, is listed as needs_reconnecting, and is taken over
 * by whoever connects the account through Stripe. Typing an id (POST .../payments) is refused: 403
 * ownership_proof_required. Disconnecting also deauthorizes the platform on the account (best effort).
 */
const STATE_TTL_MS = 10 * 60_000;
/** Connect flows one member may have under way at once; starting another drops the oldest. */
const STATES_PER_USER = 10;

const toAccount = (r: PaymentAccountRow): PaymentAccount => ({
  accountId: r.account_id,
  status: r.connected_via === 'stripe_oauth' ? 'connected' : 'needs_reconnecting',
  livemode: r.livemode,
  connectedAt: new Date(r.created_at).toISOString(),
});

export function paymentsRoutes(
  platform: Pick<Platform, 'db' | 'clock' | 'config' | 'outbound' | 'logger'>,
  opts: { stripe?: StripeConnectOAuth } = {},
): FastifyPluginAsyncZod {
  const { db, clock, config } = platform;
  const log = platform.logger.child({ component: 'stripe-connect' });
  const { STRIPE_CONNECT_CLIENT_ID: clientId, STRIPE_SECRET_KEY: secretKey } = config;
  const stripe =
    opts.stripe ??
    (clientId && secretKey ? stripeConnectOAuth({ clientId, secretKey, baseUrl: config.STRIPE_CONNECT_URL, guard: platform.outbound }) : undefined);
  const redirectUri = `${publicBaseUrl(config)}${routePath('paymentsCallback')}`;
  const stripeOrRefuse = (): StripeConnectOAuth => {
    if (!stripe)
      throw new ServiceError(
        'stripe_connect_not_configured',
        'Stripe Connect is not configured (STRIPE_CONNECT_CLIENT_ID, STRIPE_SECRET_KEY): Stripe accounts cannot be connected',
      );
    return stripe;
  };

  return async (app) => {
    app.route({
      ...declared('connectPayments'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const oauth = stripeOrRefuse();
        const credential = request.credential;
        if (credential?.kind !== 'session') throw new ServiceError('session_required', 'this route needs a signed-in console session');
        const state = randomBytes(32).toString('base64url');
        const now = clock.now();
        const expiresAt = now + STATE_TTL_MS;
        await accounts.addState(db, {
          stateHash: tokenHash(state),
          projectId: projectOf(request).id,
          userId: credential.userId,
          sessionId: credential.sessionId,
          now,
          expiresAt,
          keep: STATES_PER_USER,
        });
        return reply.code(201).send({ url: oauth.authorizeUrl(state, redirectUri), expiresAt: new Date(expiresAt).toISOString() });
      },
    });

    app.route({
      ...declared('paymentsCallback'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const oauth = stripeOrRefuse();
        const credential = request.credential;
        if (credential?.kind !== 'session') throw new ServiceError('session_required', 'this route needs a signed-in console session');
        // The answer carries nothing to cache, and the URL a code: neither is kept nor passed on.
        reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
        const { state, code, error } = request.query;
        const now = clock.now();
        const taken = await accounts.takeState(db, tokenHash(state), credential.sessionId);
        if (!taken || new Date(taken.expires_at).getTime() <= now) {
          log.warn({ reason: taken ? 'expired' : 'unknown_used_or_other_session' }, 'Stripe connect callback refused');
          throw new ServiceError(
            'invalid_state',
            taken
              ? "this Stripe connection link expired: start again from the project's Integrations page"
              : "this Stripe connection link is unknown, already used, or was started in another session: start again from the project's Integrations page",
          );
        }
        // Still a member now, not only when it started.
        const slug = await accounts.memberProjectSlug(db, taken.project_id, credential.userId);
        if (!slug || taken.user_id !== credential.userId) throw new ServiceError('not_found', 'project not found');
        const page = `/projects/${encodeURIComponent(slug)}/integrations`;
        const back = (why?: PaymentConnectFailure) => {
          if (why) log.warn({ reason: why, project: slug }, 'Stripe account not connected');
          return reply.redirect(why ? `${page}?stripe_error=${why}` : `${page}?stripe=connected`, 303);
        };
        if (error || !code) return back(error === 'access_denied' ? 'access_denied' : 'refused');
        const exchanged = await oauth.exchange(code);
        if (!exchanged.ok) {
          log.warn({ reason: exchanged.reason, detail: exchanged.detail }, 'Stripe token exchange failed');
          return back(exchanged.reason);
        }
        const bound = await accounts.bindProven(db, {
          accountId: exchanged.accountId,
          projectId: taken.project_id,
          livemode: exchanged.livemode,
          userId: credential.userId,
          now,
        });
        if (!bound) return back('account_taken');
        log.info({ project: slug, account: exchanged.accountId, livemode: exchanged.livemode }, 'Stripe account connected');
        return back();
      },
    });

    app.route({
      ...declared('addPaymentAccount'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        throw new ServiceError(
          'ownership_proof_required',
          `a Stripe account is connected only through Stripe's own consent page, never by its id: POST ${routePath('connectPayments', request.params)} and open the url it answers`,
        );
      },
    });

    app.route({
      ...declared('listPaymentAccounts'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => ({ accounts: (await accounts.list(db, projectOf(request).id)).map(toAccount) }),
    });

    app.route({
      ...declared('disconnectPaymentAccount'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const { accountId } = request.params;
        const via = await accounts.remove(db, projectOf(request).id, accountId);
        if (!via) throw new ServiceError('not_found', 'no such connected account');
        // A typed row never connected the platform to the account: nothing to revoke at Stripe.
        if (via === 'stripe_oauth' && stripe) {
          const d = await stripe.deauthorize(accountId);
          if (!d.ok) log.warn({ account: accountId, detail: d.detail }, 'Stripe deauthorize failed; the account stays connected to the platform at Stripe');
        }
        return reply.code(204).send(null);
      },
    });
  };
}
