import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { emailHash } from '../../processor/inbound/payments/stripe-orders.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startInboundFixture } from '../../test/support/inbound-fixture.ts';
import { startStripeStandin, type StripeStandin } from '../../test/support/stripe-standin.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';

/**
 * Stripe accounts connected to projects (issue 25) only through Stripe Connect OAuth (issue 38), and their events at
 * `POST /v1/webhooks/payments/connect`, signed by Stripe's own package. A stand-in for Stripe's OAuth host runs on
 * loopback (HTTPS, its certificate trusted by the tests' outbound guard, which alone lets the service reach loopback):
 * its /oauth/token names the account of each code it issued. A connected account's payment becomes the project's
 * order.created, order.paid and order.refunded, in the order's order whatever order Stripe delivers in, once however
 * often it delivers; a typed account id binds nothing; a forged, replayed or other session's state binds nothing.
 */
const SECRET = 'whsec_connect_test_secret';
const stripe = new Stripe('sk_test_placeholder');
const newAccount = () => `acct_${randomUUID().replace(/-/g, '').slice(0, 16)}`;

export function definePaymentsConnectScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let f: Awaited<ReturnType<typeof startInboundFixture>>;
    let t: typeof f.t;
    let owner: typeof f.owner;
    let consumer: typeof f.consumer;
    let stand: StripeStandin;
    const published: projectEvents.ProjectEvent[] = [];

    beforeAll(async () => {
      stand = await startStripeStandin();
      f = await startInboundFixture(
        { ...opts, overrides: { ...opts.overrides, outbound: createTestOutboundGuard({ ca: stand.cert }) } },
        { STRIPE_CONNECT_WEBHOOK_SECRETS: SECRET, ...stand.env },
      );
      ({ t, owner, consumer } = f);
      await t.platform.bus.subscribe(projectEvents.TOPIC, `payments-test-${f.suffix}`, async (messages) => {
        for (const m of messages) published.push(projectEvents.decode(m.value)!);
      });
    });
    afterAll(async () => {
      await f?.close();
      await stand?.close();
    });

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
    const newOrder = () => `pi_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const eventsOf = (projectId: string, orderId: string) => published.filter((e) => e.projectId === projectId && e.data.orderId === orderId);
    const projectIdOf = async (slug: string) => (await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;
    const list = async (cookie: string, slug: string) =>
      (await t.app.inject({ url: `/v1/projects/${slug}/payments`, headers: sessionHeaders(cookie) })).json().accounts as Array<{
        accountId: string;
        status: string;
        livemode: boolean | null;
      }>;

    /** Start a connection: Stripe's consent URL, and the state it carries. */
    const start = async (cookie: string, slug: string) => {
      const res = await t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/payments/connect`, headers: sessionHeaders(cookie) });
      expect(res.statusCode, res.body).toBe(201);
      const url = new URL(res.json().url);
      return { url, state: url.searchParams.get('state')! };
    };
    /** Stripe sends the browser back (a top-level navigation from Stripe's site, with the session cookie). */
    const callback = (cookie: string, query: Record<string, string>) =>
      t.app.inject({ url: `/v1/payments/connect/callback?${new URLSearchParams(query)}`, headers: { cookie, 'sec-fetch-site': 'cross-site' } });
    /** The whole flow: the member consents on Stripe for `account`; Stripe issues a code naming it. */
    const connect = async (user: SignedInUser, slug: string, account: string) => {
      const { state } = await start(user.cookie, slug);
      return callback(user.cookie, { code: stand.codeFor(account), state, scope: 'read_write' });
    };
    const secondSession = async (user: SignedInUser) => {
      const res = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: user.email, password: user.password } });
      return `${SESSION_COOKIE}=${res.cookies.find((c) => c.name === SESSION_COOKIE)!.value}`;
    };

    describe('payments: connecting a Stripe account through Stripe Connect OAuth', () => {
      it("binds the account Stripe's token exchange names, for the member who started, and lands on the project's Integrations page", async () => {
        const p = await createProject(t.app, owner.cookie);
        const { url, state } = await start(owner.cookie, p.slug);
        expect(url.origin).toBe(stand.url);
        expect(url.pathname).toBe('/oauth/authorize');
        expect(Object.fromEntries(url.searchParams)).toMatchObject({
          response_type: 'code',
          client_id: stand.clientId,
          scope: 'read_write',
          redirect_uri: 'http://localhost:8080/v1/payments/connect/callback',
        });
        expect(state).toMatch(/^[A-Za-z0-9_-]{40,}$/);
        const account = newAccount();
        const code = stand.codeFor(account);
        const before = stand.requests.length;
        // A parameter the browser adds names nothing: the account is the one the exchange answers.
        const res = await callback(owner.cookie, { code, state, stripe_user_id: 'acct_browsersays' });
        expect(res.statusCode).toBe(303);
        expect(res.headers.location).toBe(`/projects/${p.slug}/integrations?stripe=connected`);
        expect(res.headers['cache-control']).toBe('no-store');
        const [exchange] = stand.requests.slice(before);
        expect(exchange).toMatchObject({ method: 'POST', path: '/oauth/token' });
        expect(exchange!.headers.authorization).toBe(`Bearer ${stand.secretKey}`);
        expect(Object.fromEntries(new URLSearchParams(exchange!.body))).toEqual({ grant_type: 'authorization_code', code });
        expect(await list(owner.cookie, p.slug)).toMatchObject([{ accountId: account, status: 'connected', livemode: false }]);
        // Only the account id is kept: none of the tokens Stripe answered.
        const kept = JSON.stringify((await t.platform.db.query('SELECT * FROM payment_accounts WHERE account_id = $1', [account])).rows);
        expect(kept).not.toMatch(/sk_test_connected|rt_x/);
      });

      it("refuses a typed account id (403 ownership_proof_required): a stranger cannot take a victim's account or its orders", async () => {
        const victimProject = await createProject(t.app, owner.cookie);
        const account = newAccount();
        expect((await connect(owner, victimProject.slug, account)).statusCode).toBe(303);
        const attacker = await signUpAndSignIn(t.app, t.platform);
        const attackerProject = await createProject(t.app, attacker.cookie);
        for (const accountId of [account, newAccount()]) {
          const res = await t.app.inject({
            method: 'POST',
            url: `/v1/projects/${attackerProject.slug}/payments`,
            headers: sessionHeaders(attacker.cookie),
            payload: { accountId },
          });
          expect(res.statusCode).toBe(403);
          expect(res.json()).toMatchObject({ error: 'ownership_proof_required', message: expect.stringContaining('/payments/connect') });
        }
        expect(await list(attacker.cookie, attackerProject.slug)).toEqual([]);
        // The victim's payments stay the victim's.
        const order = newOrder();
        await send(pi(account, order, 'payment_intent.succeeded'));
        const victimId = await projectIdOf(victimProject.slug);
        await vi.waitFor(() => expect(eventsOf(victimId, order).map((e) => e.event)).toEqual(['order.created', 'order.paid']));
        expect(eventsOf(await projectIdOf(attackerProject.slug), order)).toEqual([]);
      });

      it("refuses a forged, a replayed, an expired and another session's state (400 invalid_state), binding nothing", async () => {
        const p = await createProject(t.app, owner.cookie);
        const invalid = async (res: Awaited<ReturnType<typeof callback>>) => {
          expect(res.statusCode).toBe(400);
          expect(res.json()).toMatchObject({ error: 'invalid_state' });
        };
        const exchangesBefore = stand.requests.filter((r) => r.path === '/oauth/token').length;
        // forged
        await invalid(await callback(owner.cookie, { code: 'ac_x', state: 'forged-state-forged-state-forged-state-123' }));
        expect((await callback(owner.cookie, { code: 'ac_x' })).json()).toMatchObject({ error: 'invalid_request' });
        // another user's session with the link: the attacker's own state, code and project
        const attacker = await signUpAndSignIn(t.app, t.platform);
        const attackerProject = await createProject(t.app, attacker.cookie);
        const theirs = await start(attacker.cookie, attackerProject.slug);
        await invalid(await callback(owner.cookie, { code: 'ac_attackers', state: theirs.state }));
        // the same member in another session (another browser): the state is the session's, not the user's
        const mine = await start(owner.cookie, p.slug);
        await invalid(await callback(await secondSession(owner), { code: 'ac_other_session', state: mine.state }));
        // expired
        const old = await start(owner.cookie, p.slug);
        await t.platform.db.query("UPDATE payment_connect_states SET expires_at = now() - interval '1 minute' WHERE state_hash = $1", [tokenHash(old.state)]);
        await invalid(await callback(owner.cookie, { code: 'ac_late', state: old.state }));
        expect(stand.requests.filter((r) => r.path === '/oauth/token').length).toBe(exchangesBefore);
        // replayed: the first use binds; the second, even with a code Stripe would take, is refused without an exchange
        const account = newAccount();
        const fresh = await start(owner.cookie, p.slug);
        expect((await callback(owner.cookie, { code: stand.codeFor(account), state: fresh.state })).statusCode).toBe(303);
        await invalid(await callback(owner.cookie, { code: stand.codeFor(newAccount()), state: fresh.state }));
        expect(stand.requests.filter((r) => r.path === '/oauth/token').length).toBe(exchangesBefore + 1);
        expect((await list(owner.cookie, p.slug)).map((a) => a.accountId)).toEqual([account]);
        // No callback without a session: the state alone is not enough.
        const anon = await t.app.inject({ url: `/v1/payments/connect/callback?state=${mine.state}&code=ac_y` });
        expect(anon.statusCode).toBe(401);
      });

      it('a declined consent, a code Stripe refuses, and an account another project connected each land back with the reason, binding nothing', async () => {
        const p = await createProject(t.app, owner.cookie);
        const q = await createProject(t.app, owner.cookie);
        const page = `/projects/${p.slug}/integrations`;
        const declined = await start(owner.cookie, p.slug);
        expect(
          (await callback(owner.cookie, { state: declined.state, error: 'access_denied', error_description: 'The user denied your request' })).headers.location,
        ).toBe(`${page}?stripe_error=access_denied`);
        const refused = await start(owner.cookie, p.slug);
        expect((await callback(owner.cookie, { state: refused.state, code: 'ac_never_issued' })).headers.location).toBe(`${page}?stripe_error=refused`);
        const account = newAccount();
        expect((await connect(owner, q.slug, account)).headers.location).toBe(`/projects/${q.slug}/integrations?stripe=connected`);
        expect((await connect(owner, p.slug, account)).headers.location).toBe(`${page}?stripe_error=account_taken`);
        expect(await list(owner.cookie, p.slug)).toEqual([]);
        expect((await list(owner.cookie, q.slug)).map((a) => a.accountId)).toEqual([account]);
        // Connecting it again to its own project renews it.
        expect((await connect(owner, q.slug, account)).headers.location).toBe(`/projects/${q.slug}/integrations?stripe=connected`);
      });

      it('a legacy typed binding receives no orders and reads needs_reconnecting, until its owner connects the account through Stripe', async () => {
        const squatter = await signUpAndSignIn(t.app, t.platform);
        const squatted = await createProject(t.app, squatter.cookie);
        const account = newAccount();
        // As issue 25 let anyone write it (a row from before migration 0029).
        await t.platform.db.query('INSERT INTO payment_accounts (account_id, project_id, created_at) VALUES ($1, $2, now())', [
          account,
          await projectIdOf(squatted.slug),
        ]);
        expect(await list(squatter.cookie, squatted.slug)).toEqual([
          expect.objectContaining({ accountId: account, status: 'needs_reconnecting', livemode: null }),
        ]);
        const dropped = consumer.stats().dropped.needs_reconnecting ?? 0;
        const order = newOrder();
        await send(pi(account, order, 'payment_intent.succeeded'));
        await vi.waitFor(() => expect(consumer.stats().dropped.needs_reconnecting ?? 0).toBe(dropped + 1));
        expect(published.filter((e) => e.data.orderId === order)).toEqual([]);
        // The account's owner proves it on Stripe: the binding moves to the owner's project, and orders flow there.
        const p = await createProject(t.app, owner.cookie);
        expect((await connect(owner, p.slug, account)).headers.location).toBe(`/projects/${p.slug}/integrations?stripe=connected`);
        expect(await list(squatter.cookie, squatted.slug)).toEqual([]);
        expect(await list(owner.cookie, p.slug)).toMatchObject([{ accountId: account, status: 'connected' }]);
        const next = newOrder();
        const projectId = await projectIdOf(p.slug);
        await send(pi(account, next, 'payment_intent.succeeded'));
        await vi.waitFor(() => expect(eventsOf(projectId, next).map((e) => e.event)).toEqual(['order.created', 'order.paid']));
      });

      it('disconnecting drops the account and deauthorizes the platform at Stripe; Stripe saying the owner disconnected unbinds it', async () => {
        const p = await createProject(t.app, owner.cookie);
        const account = newAccount();
        await connect(owner, p.slug, account);
        const before = stand.requests.length;
        const del = await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/payments/${account}`, headers: sessionHeaders(owner.cookie) });
        expect(del.statusCode).toBe(204);
        const [deauthorize] = stand.requests.slice(before);
        expect(deauthorize).toMatchObject({ method: 'POST', path: '/oauth/deauthorize' });
        expect(Object.fromEntries(new URLSearchParams(deauthorize!.body))).toEqual({ client_id: stand.clientId, stripe_user_id: account });
        expect(await list(owner.cookie, p.slug)).toEqual([]);
        expect(
          (await t.app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/payments/${account}`, headers: sessionHeaders(owner.cookie) })).statusCode,
        ).toBe(404);

        const other = newAccount();
        await connect(owner, p.slug, other);
        expect(
          (await send({ type: 'account.application.deauthorized', account: other, data: { object: { id: stand.clientId, object: 'application' } } }))
            .statusCode,
        ).toBe(200);
        await vi.waitFor(async () => expect(await list(owner.cookie, p.slug)).toEqual([]));
      });
    });

    describe('payments: connected accounts into order events', () => {
      it('a payment becomes order.created, order.paid, order.refunded with the documented data, each once', async () => {
        const p = await createProject(t.app, owner.cookie);
        const projectId = await projectIdOf(p.slug);
        const account = newAccount();
        await connect(owner, p.slug, account);
        const order = newOrder();
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
        const account = newAccount();
        await connect(owner, p.slug, account);
        const order = newOrder();
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
