import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { emailHash } from '../../processor/inbound/payments/stripe-orders.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';
import { startInboundFixture } from '../../test/support/inbound-fixture.ts';
import { createProject, sessionHeaders } from '../../test/support/accounts.ts';

/**
 * `POST /v1/webhooks/payments/connect` and `/v1/projects/:slug/payments` (issue 25), through HTTP, signed by Stripe's
 * own package: a connected account's payment becomes the project's order.created, order.paid and order.refunded, in
 * the order's order whatever order Stripe delivers in, and once however often it delivers.
 */
const SECRET = 'whsec_connect_test_secret';
const stripe = new Stripe('sk_test_placeholder');
export function definePaymentsConnectScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let f: Awaited<ReturnType<typeof startInboundFixture>>;
    let t: typeof f.t;
    let owner: typeof f.owner;
    let consumer: typeof f.consumer;
    const published: projectEvents.ProjectEvent[] = [];

    beforeAll(async () => {
      f = await startInboundFixture(opts, { STRIPE_CONNECT_WEBHOOK_SECRETS: SECRET });
      ({ t, owner, consumer } = f);
      await t.platform.bus.subscribe(projectEvents.TOPIC, `payments-test-${f.suffix}`, async (messages) => {
        for (const m of messages) published.push(projectEvents.decode(m.value)!);
      });
    });
    afterAll(() => f?.close());

    const send = async (event: Record<string, unknown>) => {
      const payload = JSON.stringify({ id: `evt_${randomUUID().replace(/-/g, '')}`, object: 'event', created: Math.floor(Date.now() / 1000), ...event });
      return t.app.inject({
        method: 'POST',
        url: '/v1/webhooks/payments/connect',
        headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }) },
        payload,
      });
    };
    const pi = (account: string, id: string, type: string, extra: Record<string, unknown> = {}) => ({
      type,
      account,
      data: { object: { id, object: 'payment_intent', amount: 4200, currency: 'eur', receipt_email: 'Buyer@Example.test', ...extra } },
    });
    const refund = (account: string, id: string) => ({
      type: 'charge.refunded',
      account,
      data: { object: { id: `ch_${id}`, object: 'charge', payment_intent: id, amount: 4200, amount_refunded: 4200, currency: 'eur' } },
    });
    const eventsOf = (projectId: string, orderId: string) => published.filter((e) => e.projectId === projectId && e.data.orderId === orderId);
    const projectIdOf = async (slug: string) => (await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;

    describe('payments: connected accounts into order events', () => {
      it('connects an account to one project only (session only), lists and disconnects it', async () => {
        const p = await createProject(t.app, owner.cookie);
        const q = await createProject(t.app, owner.cookie);
        const account = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        const add = (slug: string) =>
          t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/payments`, headers: sessionHeaders(owner.cookie), payload: { accountId: account } });
        expect((await add(p.slug)).statusCode).toBe(201);
        expect((await add(q.slug)).statusCode).toBe(409);
        expect(
          (
            await t.app.inject({
              method: 'POST',
              url: `/v1/projects/${p.slug}/payments`,
              headers: sessionHeaders(owner.cookie),
              payload: { accountId: 'not-an-account' },
            })
          ).statusCode,
        ).toBe(400);
        expect(
          (await t.app.inject({ url: `/v1/projects/${p.slug}/payments`, headers: sessionHeaders(owner.cookie) }))
            .json()
            .accounts.map((a: { accountId: string }) => a.accountId),
        ).toEqual([account]);
        expect(
          (await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/payments/${account}`, headers: sessionHeaders(owner.cookie) })).statusCode,
        ).toBe(204);
        expect((await add(q.slug)).statusCode).toBe(201);
      });

      it('a payment becomes order.created, order.paid, order.refunded with the documented data, each once', async () => {
        const p = await createProject(t.app, owner.cookie);
        const projectId = await projectIdOf(p.slug);
        const account = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/payments`, headers: sessionHeaders(owner.cookie), payload: { accountId: account } });
        const order = `pi_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
        expect((await send(pi(account, order, 'payment_intent.created'))).statusCode).toBe(200);
        expect((await send(pi(account, order, 'payment_intent.succeeded'))).statusCode).toBe(200);
        // Stripe delivers again under a new event id: nothing is emitted twice.
        await send(pi(account, order, 'payment_intent.succeeded'));
        await send(refund(account, order));
        await vi.waitFor(() => expect(eventsOf(projectId, order).map((e) => e.event)).toEqual(['order.created', 'order.paid', 'order.refunded']));
        expect(eventsOf(projectId, order)[1]!.data).toEqual({
          orderId: order,
          account,
          amount: 4200,
          currency: 'eur',
          customerEmailHash: emailHash('buyer@example.test'),
        });
        expect(eventsOf(projectId, order)[2]!.data).toMatchObject({ amountRefunded: 4200 });
        expect(JSON.stringify(eventsOf(projectId, order))).not.toMatch(/example\.test/i);
      });

      it('a refund that arrives before its payment is kept, then emitted right after order.paid', async () => {
        const p = await createProject(t.app, owner.cookie);
        const projectId = await projectIdOf(p.slug);
        const account = `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
        await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/payments`, headers: sessionHeaders(owner.cookie), payload: { accountId: account } });
        const order = `pi_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
        await send(refund(account, order));
        expect(eventsOf(projectId, order)).toEqual([]);
        await send(pi(account, order, 'payment_intent.succeeded'));
        await vi.waitFor(() => expect(eventsOf(projectId, order).map((e) => e.event)).toEqual(['order.created', 'order.paid', 'order.refunded']));
      });

      it('events of an account no project connected, and events that are no order step, emit nothing', async () => {
        const before = published.length;
        await send(pi('acct_nobodyconnectedthis', 'pi_orphan', 'payment_intent.succeeded'));
        await send({ type: 'customer.created', account: 'acct_x', data: { object: { id: 'cus_1' } } });
        await vi.waitFor(() => expect(consumer.stats().dropped.unconnected_account ?? 0).toBeGreaterThanOrEqual(1));
        expect(published.length).toBe(before);
      });
    });
  });
}
