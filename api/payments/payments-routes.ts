import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { errorAnswers, NoContent, SlugParams } from '../../schemas/api/common.ts';
import { ConnectPaymentAccountBody, PaymentAccountAnswer, PaymentAccountList, PaymentAccountParams, type PaymentAccount } from '../../schemas/api/payments.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';

/**
 * `/v1/projects/:slug/payments` (spec §4.1, "connected payment accounts"; console session only, like other money
 * settings): connect a Stripe account to the project, list, disconnect. The account's events, sent by Stripe Connect to
 * `POST /v1/webhooks/payments/connect`, become the project's order.created, order.paid and order.refunded events.
 * An account feeds one project: connecting one another project holds is 409 conflict.
 */
const toAccount = (r: { account_id: string; created_at: Date | string }): PaymentAccount => ({
  accountId: r.account_id,
  connectedAt: new Date(r.created_at).toISOString(),
});

export function paymentsRoutes(platform: Pick<Platform, 'db' | 'clock'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.post(
      '/v1/projects/:slug/payments',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['payments'],
          summary: 'Connect a Stripe account to the project',
          params: SlugParams,
          body: ConnectPaymentAccountBody,
          response: { 201: PaymentAccountAnswer, ...errorAnswers(400, 409) },
        },
      },
      async (request, reply) => {
        const r = await db.query<{ account_id: string; created_at: Date }>(
          'INSERT INTO payment_accounts (account_id, project_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (account_id) DO NOTHING RETURNING account_id, created_at',
          [request.body.accountId, projectOf(request).id, new Date(clock.now())],
        );
        if (!r.rows[0]) throw new ServiceError('conflict', `${request.body.accountId} is already connected to a project`);
        return reply.code(201).send({ account: toAccount(r.rows[0]) });
      },
    );

    app.get(
      '/v1/projects/:slug/payments',
      {
        config: { auth: AUTH.sessionOnly },
        schema: { tags: ['payments'], summary: "The project's connected Stripe accounts", params: SlugParams, response: { 200: PaymentAccountList } },
      },
      async (request) => {
        const r = await db.query<{ account_id: string; created_at: Date }>(
          'SELECT account_id, created_at FROM payment_accounts WHERE project_id = $1 ORDER BY created_at',
          [projectOf(request).id],
        );
        return { accounts: r.rows.map(toAccount) };
      },
    );

    app.delete(
      '/v1/projects/:slug/payments/:accountId',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags: ['payments'],
          summary: 'Disconnect a Stripe account: its events are dropped from now on',
          params: PaymentAccountParams,
          response: { 204: NoContent, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        const r = await db.query('DELETE FROM payment_accounts WHERE project_id = $1 AND account_id = $2 RETURNING account_id', [
          projectOf(request).id,
          request.params.accountId,
        ]);
        if (!r.rows.length) throw new ServiceError('not_found', 'no such connected account');
        return reply.code(204).send(null);
      },
    );
  };
}
