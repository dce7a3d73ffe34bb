import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublicInternetGuard } from '../../platform/adapters/outbound/public-internet-guard.ts';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';
import { startHttpsReceiver, type Answer, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { stripeConnectOAuth } from './stripe-connect-oauth.ts';

/**
 * The platform's side of Stripe Connect OAuth against a stand-in on loopback: what production's outbound guard and
 * configuration allow (no loopback token exchange, https only, both credentials or none), and that only a well-formed
 * `stripe_user_id` from a 200 answer is ever taken as the account.
 */
describe('Stripe Connect OAuth client', () => {
  let stand: HttpsReceiver;
  let answer: Answer;
  const opts = () => ({ clientId: 'ca_test', secretKey: 'sk_test_key', baseUrl: `https://127.0.0.1:${stand.port}`, timeoutMs: 5_000 });
  beforeAll(async () => {
    stand = await startHttpsReceiver();
    stand.respond = () => answer;
  });
  afterAll(() => stand?.close());

  it("production's guard never lets the token exchange reach loopback, even with the developer's ALLOW_LOCAL_WEBHOOKS", async () => {
    const before = stand.requests.length;
    answer = { status: 200, body: JSON.stringify({ stripe_user_id: 'acct_1Loopback' }) };
    for (const guard of [createPublicInternetGuard(), createPublicInternetGuard({ allowLocal: true })]) {
      const out = await stripeConnectOAuth({ ...opts(), guard }).exchange('ac_1');
      expect(out).toMatchObject({ ok: false, reason: 'exchange_failed' });
      expect(await stripeConnectOAuth({ ...opts(), guard }).deauthorize('acct_1Loopback')).toMatchObject({ ok: false });
    }
    expect(stand.requests.length).toBe(before);
  });

  it('takes the account only from a 200 answer with a well-formed stripe_user_id; follows no redirect', async () => {
    const client = stripeConnectOAuth({ ...opts(), guard: createTestOutboundGuard({ ca: stand.cert }) });
    const cases: Array<[Answer, unknown]> = [
      [
        { status: 200, body: JSON.stringify({ stripe_user_id: 'acct_1Good', livemode: true }) },
        { ok: true, accountId: 'acct_1Good', livemode: true },
      ],
      [
        { status: 400, body: JSON.stringify({ error: 'invalid_grant', error_description: 'used' }) },
        { ok: false, reason: 'refused' },
      ],
      [
        { status: 500, body: 'oops' },
        { ok: false, reason: 'exchange_failed' },
      ],
      [
        { status: 200, body: 'not json' },
        { ok: false, reason: 'exchange_failed' },
      ],
      [
        { status: 200, body: JSON.stringify({ stripe_user_id: 'acct_1"; DROP' }) },
        { ok: false, reason: 'exchange_failed' },
      ],
      [
        { status: 200, body: JSON.stringify({ stripe_user_id: ['acct_1Array'] }) },
        { ok: false, reason: 'exchange_failed' },
      ],
      [
        { status: 302, headers: { location: 'https://127.0.0.1:1/oauth/token' } },
        { ok: false, reason: 'exchange_failed' },
      ],
      [
        { status: 200, body: JSON.stringify({ stripe_user_id: 'acct_1Big', pad: 'x'.repeat(100_000) }) },
        { ok: false, reason: 'exchange_failed' },
      ],
    ];
    for (const [a, expected] of cases) {
      answer = a;
      expect(await client.exchange('ac_1'), JSON.stringify(a).slice(0, 80)).toMatchObject(expected as object);
    }
  });

  it('configuration: https only for STRIPE_CONNECT_URL, the client id and the secret key together, in their own forms', () => {
    expect(loadConfig({}).STRIPE_CONNECT_URL).toBe('https://connect.stripe.com');
    expect(() => loadConfig({ STRIPE_CONNECT_URL: 'http://127.0.0.1:9/' })).toThrow(ConfigError);
    expect(() => loadConfig({ STRIPE_CONNECT_CLIENT_ID: 'ca_only' })).toThrow(/together/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_live_only' })).toThrow(/together/);
    expect(() => loadConfig({ STRIPE_CONNECT_CLIENT_ID: 'acct_1', STRIPE_SECRET_KEY: 'sk_live_x' })).toThrow(ConfigError);
    expect(() => loadConfig({ STRIPE_CONNECT_CLIENT_ID: 'ca_1', STRIPE_SECRET_KEY: 'pk_live_x' })).toThrow(ConfigError);
    expect(loadConfig({ STRIPE_CONNECT_CLIENT_ID: 'ca_1', STRIPE_SECRET_KEY: 'rk_live_x' }).STRIPE_SECRET_KEY).toBe('rk_live_x');
  });
});
