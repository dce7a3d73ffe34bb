import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { definePaymentsConnectScenarios } from './payments-connect.test-scenarios.ts';

definePaymentsConnectScenarios('payments: connected accounts into order events (embedded)');

describe('payments: Stripe Connect not configured', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  beforeAll(async () => {
    t = await buildTestApi();
  });
  afterAll(() => t?.close());

  it('starting a connection answers 503 stripe_connect_not_configured; a typed id is still refused, and the list still answers', async () => {
    const owner = await signUpAndSignIn(t.app, t.platform);
    const p = await createProject(t.app, owner.cookie);
    const start = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/payments/connect`, headers: sessionHeaders(owner.cookie) });
    expect(start.statusCode).toBe(503);
    expect(start.json()).toMatchObject({ error: 'stripe_connect_not_configured' });
    const typed = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/payments`,
      headers: sessionHeaders(owner.cookie),
      payload: { accountId: 'acct_1Victim' },
    });
    expect(typed.statusCode).toBe(403);
    expect(typed.json()).toMatchObject({ error: 'ownership_proof_required' });
    expect((await t.app.inject({ url: `/v1/projects/${p.slug}/payments`, headers: sessionHeaders(owner.cookie) })).json()).toEqual({ accounts: [] });
  });
});
