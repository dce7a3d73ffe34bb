import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { TestPlatformOptions } from '../../test/support/platform.ts';
import { startInboundFixture } from '../../test/support/inbound-fixture.ts';
import { bearer, createCliToken, createProject, sessionHeaders } from '../../test/support/accounts.ts';

/**
 * `POST /v1/webhooks/payments` (the platform's own Stripe billing events) and `GET /v1/billing` (issue 25), through HTTP
 * with Stripe's own signer: the ledger keeps every event, and the newest by Stripe's time decides the plan state.
 */
const SECRET = 'whsec_billing_test_secret';
const stripe = new Stripe('sk_test_placeholder');
export function defineBillingScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let f: Awaited<ReturnType<typeof startInboundFixture>>;
    let t: typeof f.t;
    let owner: typeof f.owner;

    beforeAll(async () => {
      f = await startInboundFixture(opts, { STRIPE_WEBHOOK_SECRETS: SECRET });
      ({ t, owner } = f);
    });
    afterAll(() => f?.close());

    const send = async (type: string, object: Record<string, unknown>, createdSec: number) => {
      const payload = JSON.stringify({ id: `evt_${randomUUID().replace(/-/g, '')}`, object: 'event', type, created: createdSec, data: { object } });
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/webhooks/payments',
        headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET }) },
        payload,
      });
      expect(res.statusCode).toBe(200);
    };

    describe("billing: the platform's own Stripe events", () => {
      it("shows each project's plan, status and last invoice from the newest events by Stripe's time, whatever the delivery order", async () => {
        const p = await createProject(t.app, owner.cookie);
        const quiet = await createProject(t.app, owner.cookie);
        const sub = (status: string, nickname: string) => ({
          id: 'sub_1',
          object: 'subscription',
          status,
          metadata: { project: p.slug },
          items: { data: [{ price: { id: 'price_1', nickname } }] },
        });
        const t0 = Math.floor(Date.now() / 1000) - 1000;
        // Delivered newest first: the upgrade, then the older creation.
        await send('customer.subscription.updated', sub('active', 'Pro'), t0 + 100);
        await send('customer.subscription.created', sub('trialing', 'Hobby'), t0);
        await send('invoice.payment_failed', { id: 'in_1', object: 'invoice', amount_due: 2000, currency: 'usd', metadata: { project: p.slug } }, t0 + 50);
        await send(
          'invoice.paid',
          { id: 'in_2', object: 'invoice', amount_paid: 2000, currency: 'usd', subscription_details: { metadata: { project: p.slug } } },
          t0 + 200,
        );
        await vi.waitFor(async () => {
          const { projects } = (await t.app.inject({ url: '/v1/billing', headers: sessionHeaders(owner.cookie) })).json();
          expect(projects.find((x: { project: string }) => x.project === p.slug)).toEqual({
            project: p.slug,
            plan: 'Pro',
            status: 'active',
            lastInvoice: { status: 'paid', amount: 2000, currency: 'usd', at: new Date((t0 + 200) * 1000).toISOString() },
          });
          expect(projects.find((x: { project: string }) => x.project === quiet.slug)).toEqual({
            project: quiet.slug,
            plan: null,
            status: null,
            lastInvoice: null,
          });
        });
      });

      it('is session only: a CLI token is refused', async () => {
        const cli = await createCliToken(t.app, owner.cookie);
        expect((await t.app.inject({ url: '/v1/billing', headers: bearer(cli.token) })).statusCode).toBe(403);
      });
    });
  });
}
