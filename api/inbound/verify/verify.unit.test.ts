import { sign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { Webhook } from 'svix';
import { describe, expect, it } from 'vitest';
import { verifyDelivery } from '../inbound-routes.ts';

/**
 * Each provider's deliveries verified the provider's own way, signed here by the provider's own library: GitHub's
 * (@octokit/webhooks-methods), Stripe's (`stripe.webhooks.generateTestHeaderString`) and Resend's (Svix).
 */
const NOW = 1_795_000_000;

describe('GitHub: X-Hub-Signature-256 over the raw body', () => {
  const body = JSON.stringify({ zen: 'Design for failure.', hook_id: 7 });
  const headers = async (secret: string, raw = body) => ({
    'x-hub-signature-256': await sign(secret, raw),
    'x-github-delivery': 'd-1',
    'x-github-event': 'ping',
    'content-type': 'application/json',
  });

  it('takes a body signed with any configured secret (rotation) and refuses a changed byte', async () => {
    const ok = verifyDelivery('github', await headers('second-secret'), Buffer.from(body), ['first-secret', 'second-secret'], NOW);
    expect(ok).toMatchObject({ ok: true, deliveryId: 'd-1', event: 'ping', payload: { hook_id: 7 } });
    const reserialised = JSON.stringify(JSON.parse(body), null, 1);
    expect(verifyDelivery('github', await headers('second-secret'), Buffer.from(reserialised), ['second-secret'], NOW)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyDelivery('github', { 'x-github-delivery': 'd', 'x-github-event': 'ping' }, Buffer.from(body), ['s-e-c-r-e-t'], NOW)).toMatchObject({
      ok: false,
      reason: 'missing_signature',
    });
    expect(verifyDelivery('github', await headers('first-secret'), Buffer.from(body), [], NOW)).toMatchObject({ ok: false, reason: 'no_secret_configured' });
  });

  it('reads a form-encoded body (payload=) and refuses a signed body that is no JSON object', async () => {
    const form = `payload=${encodeURIComponent(body)}`;
    const h = { ...(await headers('sec-ret-123', form)), 'content-type': 'application/x-www-form-urlencoded' };
    expect(verifyDelivery('github', h, Buffer.from(form), ['sec-ret-123'], NOW)).toMatchObject({ ok: true, payload: { hook_id: 7 } });
    expect(verifyDelivery('github', await headers('sec-ret-123', '[1,2]'), Buffer.from('[1,2]'), ['sec-ret-123'], NOW)).toMatchObject({
      ok: false,
      reason: 'malformed_body',
    });
    // A correctly signed nesting bomb is refused before anything walks it.
    const bomb = `{"a":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    expect(verifyDelivery('github', await headers('sec-ret-123', bomb), Buffer.from(bomb), ['sec-ret-123'], NOW)).toMatchObject({
      ok: false,
      reason: 'malformed_body',
    });
  });
});

describe('Stripe: Stripe-Signature t=,v1= as the stripe package verifies it', () => {
  const stripe = new Stripe('sk_test_placeholder');
  const event = JSON.stringify({ id: 'evt_1', type: 'checkout.session.completed', account: 'acct_1', data: { object: {} } });
  const header = (secret: string, timestamp = NOW) => stripe.webhooks.generateTestHeaderString({ payload: event, secret, timestamp });

  it("takes the package's own header, any v1 of several, and refuses an old timestamp or another secret", () => {
    expect(verifyDelivery('stripe_connect', { 'stripe-signature': header('whsec_abcdefgh') }, Buffer.from(event), ['whsec_abcdefgh'], NOW)).toMatchObject({
      ok: true,
      deliveryId: 'evt_1',
      event: 'checkout.session.completed',
    });
    // Stripe sends a v1 per active secret while it rolls one: any one matching is enough.
    const two = `${header('whsec_old00000')},v1=${header('whsec_new00000').split('v1=')[1]}`;
    expect(verifyDelivery('stripe', { 'stripe-signature': two }, Buffer.from(event), ['whsec_new00000'], NOW)).toMatchObject({ ok: true });
    expect(verifyDelivery('stripe', { 'stripe-signature': header('whsec_abcdefgh', NOW - 301) }, Buffer.from(event), ['whsec_abcdefgh'], NOW)).toMatchObject({
      ok: false,
      reason: 'expired_timestamp',
    });
    expect(verifyDelivery('stripe', { 'stripe-signature': header('whsec_other000') }, Buffer.from(event), ['whsec_abcdefgh'], NOW)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyDelivery('stripe', { 'stripe-signature': 't=abc' }, Buffer.from(event), ['whsec_abcdefgh'], NOW)).toMatchObject({
      ok: false,
      reason: 'missing_signature',
    });
  });
});

describe('Resend: Svix headers (svix-id, svix-timestamp, svix-signature)', () => {
  const secret = `whsec_${Buffer.from('resend-test-secret-32-bytes-long').toString('base64')}`;
  const body = JSON.stringify({ type: 'email.delivered', created_at: '2026-11-25T12:00:00Z', data: { to: ['a@example.test'] } });
  const headers = (s: string, ts = NOW, id = 'msg_1') => ({
    'svix-id': id,
    'svix-timestamp': String(ts),
    'svix-signature': new Webhook(s).sign(id, new Date(ts * 1000), body),
  });

  it("takes Svix's own signature, refuses another secret, an old timestamp and a changed id", () => {
    expect(verifyDelivery('resend', headers(secret), Buffer.from(body), [secret], NOW)).toMatchObject({
      ok: true,
      deliveryId: 'msg_1',
      event: 'email.delivered',
    });
    const other = `whsec_${Buffer.from('another-secret-of-thirty-two-byt').toString('base64')}`;
    expect(verifyDelivery('resend', headers(other), Buffer.from(body), [secret], NOW)).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifyDelivery('resend', headers(secret, NOW - 600), Buffer.from(body), [secret], NOW)).toMatchObject({ ok: false, reason: 'expired_timestamp' });
    expect(verifyDelivery('resend', { ...headers(secret), 'svix-id': 'msg_2' }, Buffer.from(body), [secret], NOW)).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });
});
