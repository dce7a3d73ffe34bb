import { randomUUID } from 'node:crypto';
import { startHttpsReceiver, type ReceivedRequest } from './https-receiver.ts';

/**
 * A stand-in for Stripe's Connect OAuth host on loopback (https, a self-signed certificate the tests' outbound guard
 * trusts), enough of it for api/payments/stripe-connect-oauth.ts: `/oauth/token` exchanges a code it issued (once) for
 * the account the test chose, to the platform's secret key only; `/oauth/deauthorize` answers for the platform's client
 * id. `env` is the configuration that points the service at it.
 */
export interface StripeStandin {
  url: string;
  cert: string;
  clientId: string;
  secretKey: string;
  env: Record<'STRIPE_CONNECT_CLIENT_ID' | 'STRIPE_SECRET_KEY' | 'STRIPE_CONNECT_URL', string>;
  /** A code Stripe's consent page would return for the owner of `account`. */
  codeFor(account: string): string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

export async function startStripeStandin(): Promise<StripeStandin> {
  const clientId = 'ca_TestPlatformClient';
  const secretKey = 'sk_test_platformSecretKey';
  const codes = new Map<string, string>();
  const receiver = await startHttpsReceiver();
  const json = (status: number, body: unknown) => ({ status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  receiver.respond = (req) => {
    const form = new URLSearchParams(req.body);
    if (req.headers.authorization !== `Bearer ${secretKey}`) return json(401, { error: 'invalid_client' });
    if (req.method === 'POST' && req.path === '/oauth/token') {
      const code = form.get('code') ?? '';
      const account = form.get('grant_type') === 'authorization_code' ? codes.get(code) : undefined;
      if (!account) return json(400, { error: 'invalid_grant', error_description: 'no such code' });
      codes.delete(code);
      return json(200, {
        access_token: 'sk_test_connected',
        refresh_token: 'rt_x',
        token_type: 'bearer',
        livemode: false,
        stripe_user_id: account,
        scope: 'read_write',
      });
    }
    if (req.method === 'POST' && req.path === '/oauth/deauthorize' && form.get('client_id') === clientId)
      return json(200, { stripe_user_id: form.get('stripe_user_id') });
    return { status: 404 };
  };
  const url = `https://127.0.0.1:${receiver.port}`;
  return {
    url,
    cert: receiver.cert,
    clientId,
    secretKey,
    env: { STRIPE_CONNECT_CLIENT_ID: clientId, STRIPE_SECRET_KEY: secretKey, STRIPE_CONNECT_URL: url },
    codeFor(account) {
      const code = `ac_${randomUUID()}`;
      codes.set(code, account);
      return code;
    },
    requests: receiver.requests,
    close: () => receiver.close(),
  };
}
