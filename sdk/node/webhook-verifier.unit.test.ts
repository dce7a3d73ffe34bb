import { describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { signatureHeader } from '../../processor/webhooks/webhook-signature.ts';
import { parseSignatureHeader, verifySignature, verifyWebhook, WebhookVerificationError } from './webhook-verifier.ts';

const secret = 'whsec_test_secret_value_0123456789';
const body = JSON.stringify({ event: 'deploy.succeeded', data: { id: 'dep_1' }, sentAt: '2026-11-21T12:00:00.000Z' });
const reason = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return (err as WebhookVerificationError).reason;
  }
  return 'accepted';
};

describe('sdk webhook verifier', () => {
  it("accepts Stripe's generateTestHeaderString (same scheme, independent implementation)", () => {
    const header = Stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    expect(verifyWebhook(body, header, secret)).toEqual(JSON.parse(body));
    expect(verifyWebhook(Buffer.from(body), header, secret).event).toBe('deploy.succeeded');
  });

  it('accepts when any one v1 matches (rotation), refuses when none does', () => {
    const t = Math.floor(Date.now() / 1000);
    const both = signatureHeader(['whsec_new', 'whsec_old'], t, body);
    expect(reason(() => verifySignature(body, both, 'whsec_new'))).toBe('accepted');
    expect(reason(() => verifySignature(body, both, 'whsec_old'))).toBe('accepted');
    expect(reason(() => verifySignature(body, both, 'whsec_other'))).toBe('no_matching_signature');
    expect(reason(() => verifySignature(body + ' ', both, 'whsec_new'))).toBe('no_matching_signature');
    expect(parseSignatureHeader(both).signatures).toHaveLength(2);
  });

  it('refuses a timestamp more than 300 s from now, in either direction', () => {
    const now = Date.UTC(2026, 10, 21, 12, 0, 0);
    const t = now / 1000;
    for (const [offset, want] of [
      [0, 'accepted'],
      [-300, 'accepted'],
      [300, 'accepted'],
      [-301, 'timestamp_out_of_tolerance'],
      [301, 'timestamp_out_of_tolerance'],
      [-86_400, 'timestamp_out_of_tolerance'],
    ] as const) {
      const header = signatureHeader([secret], t + offset, body);
      expect({ offset, r: reason(() => verifySignature(body, header, secret, { now })) }).toEqual({ offset, r: want });
    }
    const old = Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Math.floor(Date.now() / 1000) - 301 });
    expect(reason(() => verifySignature(body, old, secret))).toBe('timestamp_out_of_tolerance');
  });

  it('refuses missing and malformed headers', () => {
    expect(reason(() => verifySignature(body, undefined, secret))).toBe('missing_header');
    expect(reason(() => verifySignature(body, '', secret))).toBe('missing_header');
    for (const h of ['t=abc,v1=00', 'v1=' + 'a'.repeat(64), 't=1700000000', 't=1700000000,v0=' + 'a'.repeat(64), 'garbage']) {
      expect({ h, r: reason(() => verifySignature(body, h, secret)) }).toEqual({ h, r: 'malformed_header' });
    }
  });
});
