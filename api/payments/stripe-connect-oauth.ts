import { guardedFetch } from '../../platform/guarded-fetch.ts';
import type { OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';

/**
 * Stripe Connect OAuth, the platform's side (Stripe's "Connect OAuth reference"), the one way an account is bound:
 *   - the consent URL (`/oauth/authorize`) the signed-in member's browser is sent to, with the platform's client id,
 *     the callback and a one-use state
 *   - the code Stripe returns exchanged at `/oauth/token` with the platform's secret key: its `stripe_user_id` is the
 *     only source of a connected account id. The access and refresh tokens in the answer are dropped unread (Connect
 *     events reach the platform's Connect endpoint without them)
 *   - `/oauth/deauthorize` when a project disconnects the account: the platform keeps no hold on it
 * The two calls leave through the outbound guard (use `provider_api`: https, public addresses only in production; only
 * the tests' guard lets a loopback stand-in through), redirects are not followed, one deadline, answers bounded.
 */
export type ExchangeOutcome =
  | { ok: true; accountId: string; livemode: boolean }
  /** refused: Stripe answered the code with an OAuth error (used, expired, another platform's); exchange_failed: anything else. */
  | { ok: false; reason: 'refused' | 'exchange_failed'; detail: string };

export interface StripeConnectOAuth {
  authorizeUrl(state: string, redirectUri: string): string;
  exchange(code: string): Promise<ExchangeOutcome>;
  /** Best effort: whether Stripe confirmed, and why not. */
  deauthorize(accountId: string): Promise<{ ok: true } | { ok: false; detail: string }>;
}

const TIMEOUT_MS = 15_000;
const MAX_BYTES = 64 * 1024;
export const ACCOUNT_ID = /^acct_[A-Za-z0-9]{1,64}$/;

export function stripeConnectOAuth(opts: {
  clientId: string;
  secretKey: string;
  baseUrl: string;
  guard: OutboundUrlGuard;
  timeoutMs?: number;
}): StripeConnectOAuth {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const fetch = guardedFetch({ guard: opts.guard, use: 'provider_api', timeoutMs: opts.timeoutMs ?? TIMEOUT_MS, maxBytes: MAX_BYTES });

  /** A form POST with the secret key; the answer's status and JSON object (undefined when it is not one). */
  async function post(path: string, form: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> | undefined }> {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${opts.secretKey}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form).toString(),
    });
    let json: unknown;
    try {
      json = JSON.parse(await res.text());
    } catch {
      json = undefined;
    }
    return { status: res.status, json: json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined };
  }

  return {
    authorizeUrl(state, redirectUri) {
      const q = new URLSearchParams({ response_type: 'code', client_id: opts.clientId, scope: 'read_write', redirect_uri: redirectUri, state });
      return `${base}/oauth/authorize?${q}`;
    },

    async exchange(code) {
      let answer: Awaited<ReturnType<typeof post>>;
      try {
        answer = await post('/oauth/token', { grant_type: 'authorization_code', code });
      } catch (err) {
        return { ok: false, reason: 'exchange_failed', detail: (err as Error).message };
      }
      const { status, json } = answer;
      if (status >= 400 && status < 500 && typeof json?.error === 'string')
        return { ok: false, reason: 'refused', detail: `${json.error}: ${String(json.error_description ?? '')}`.slice(0, 300) };
      if (status !== 200) return { ok: false, reason: 'exchange_failed', detail: `Stripe answered HTTP ${status}` };
      const accountId = json?.stripe_user_id;
      if (typeof accountId !== 'string' || !ACCOUNT_ID.test(accountId))
        return { ok: false, reason: 'exchange_failed', detail: 'Stripe answered without an account id' };
      return { ok: true, accountId, livemode: json?.livemode === true };
    },

    async deauthorize(accountId) {
      try {
        const { status } = await post('/oauth/deauthorize', { client_id: opts.clientId, stripe_user_id: accountId });
        return status === 200 ? { ok: true } : { ok: false, detail: `Stripe answered HTTP ${status}` };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
  };
}
