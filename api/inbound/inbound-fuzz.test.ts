import { sign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';
import { INBOUND_ROUTES } from '../../schemas/inbound.ts';
import { buildTestApi } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * The four inbound provider routes under random input, unsigned and signed: bodies of any bytes and type, signature
 * headers of every shape, and correctly signed JSON of any shape (which reaches the processor). Every answer is a JSON
 * error or success below 500, the processor never stops, and the service keeps answering. Seeded.
 */
const GITHUB = 'fuzz-github-secret';
const STRIPE = 'whsec_fuzzfuzzfuzz';
let t: Awaited<ReturnType<typeof buildTestApi>>;
let consumer: PipelineConsumer<string>;

beforeAll(async () => {
  t = await buildTestApi({ env: { GITHUB_WEBHOOK_SECRETS: GITHUB, STRIPE_WEBHOOK_SECRETS: STRIPE, STRIPE_CONNECT_WEBHOOK_SECRETS: STRIPE } });
  consumer = await startInboundConsumer(t.platform);
});
afterAll(async () => {
  await consumer?.stop();
  await t?.close();
});

describe('inbound provider routes under random input', () => {
  it('never answer 5xx, always JSON, and keep serving', async () => {
    const rnd = prng(25);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const stripe = new Stripe('sk_test_placeholder');
    const shapes = () =>
      pick<unknown>([
        {
          ref: pick(['refs/heads/main', 'refs/tags/x', 7, null]),
          repository: pick([{ full_name: text(10) }, 'x', null]),
          head_commit: pick([null, { message: 5 }]),
        },
        { action: 'opened', pull_request: pick([null, { head: { ref: ['a'] } }]), repository: { full_name: 'a/b' } },
        { id: text(5), type: text(5), data: pick([null, [], { object: text(3) }]) },
        { a: { b: { c: { d: [1, 2, { e: 'deep' }] } } } },
        {},
      ]);
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const provider = pick(['github', 'stripe', 'stripe_connect', 'resend'] as const);
      const signed = rnd() < 0.5;
      const json = JSON.stringify(shapes());
      const body: Buffer = signed ? Buffer.from(json) : pick([Buffer.alloc(0), bytes(Math.floor(rnd() * 3000)), Buffer.from(text(200)), Buffer.from('{"a":')]);
      const headers: Record<string, string> = {
        'content-type': pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'application/octet-stream']),
      };
      if (provider === 'github') {
        headers['x-github-event'] = pick(['push', 'pull_request', 'ping', text(5).replace(/[^\x20-\x7e]/g, 'z')]);
        headers['x-github-delivery'] = `fuzz-${i}-${Math.floor(rnd() * 5)}`;
        if (signed) {
          headers['content-type'] = 'application/json';
          headers['x-hub-signature-256'] = await sign(GITHUB, body.toString('utf8'));
        } else if (rnd() < 0.5) headers['x-hub-signature-256'] = pick([`sha256=${'a'.repeat(64)}`, 'sha256=', `sha256=${'g'.repeat(64)}`]);
      } else if (provider !== 'resend') {
        if (signed) headers['stripe-signature'] = stripe.webhooks.generateTestHeaderString({ payload: body.toString('utf8'), secret: STRIPE });
        else if (rnd() < 0.5)
          headers['stripe-signature'] = pick(['t=1,v1=zz', 't=,v1=', `t=${Date.now()},v1=${'0'.repeat(64)}`, text(30).replace(/[^\x20-\x7e]/g, 'z')]);
      } else if (rnd() < 0.5) {
        headers['svix-id'] = 'x';
        headers['svix-timestamp'] = pick(['1', 'abc', String(Math.floor(Date.now() / 1000))]);
        headers['svix-signature'] = pick(['v1,AAAA', 'v2,x', '']);
      }
      const method = pick<'POST' | 'GET' | 'PUT'>(['POST', 'POST', 'POST', 'GET', 'PUT']);
      const res = await t.app.inject({ method, url: ROUTES[INBOUND_ROUTES[provider]].path, headers, payload: method === 'GET' ? undefined : body });
      seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
      expect(res.statusCode, `${method} ${provider} ${res.body.slice(0, 200)}`).toBeLessThan(500);
      expect(res.headers['content-type']).toMatch(/application\/json/);
    }
    // Signed deliveries were taken (200) and unsigned ones refused (401): both paths were exercised.
    expect(seen.get(200)).toBeGreaterThan(10);
    expect(seen.get(401)).toBeGreaterThan(10);
    expect((await t.app.inject({ url: '/v1/webhooks/health' })).statusCode).toBe(200);
    const s = consumer.stats();
    expect(s.accepted + s.duplicates + Object.values(s.dropped).reduce((a: number, b) => a + (b ?? 0), 0)).toBeGreaterThan(10);
  });

  it('take no query string: the providers add none, so a URL configured with one is refused, not half-read', async () => {
    const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
    const ping = async (query: string, delivery: string) =>
      t.app.inject({
        method: 'POST',
        url: `${ROUTES.inboundCodeHost.path}${query}`,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'ping',
          'x-github-delivery': delivery,
          'x-hub-signature-256': await sign(GITHUB, body),
        },
        payload: body,
      });
    const refused = await ping('?token=abc', 'query-1');
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_request');
    expect((await ping('', 'query-2')).statusCode).toBe(200);
    expect((await t.app.inject({ url: `${ROUTES.inboundHealth.path}?verbose=1` })).statusCode).toBe(400);
  });
});
