import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import type { Platform } from '../../platform/platform.ts';
import type { ManualClock } from '../../platform/clock.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { createWebhookTestPlatform, insertEndpoint, insertProject } from '../../test/support/webhook-platform.ts';
import { processed } from '../../test/support/platform.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.ts';
import { deliveryId } from './deliveries-repository.ts';
import { steerableGuard, type SteerableGuard } from '../../test/support/outbound-guard.ts';

const stripe = Stripe.webhooks;

let receiver: HttpsReceiver;
let platform: Platform & { clock: ManualClock };
let dispatcher: WebhookDispatcher;
const resolveTable: Record<string, string[]> = {};
let outbound: SteerableGuard;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  // Names under .test resolve through resolveTable (rebinding tests); the rest through the system.
  outbound = steerableGuard({ ca: receiver.cert });
  outbound.table = resolveTable;
  platform = await createWebhookTestPlatform({ outbound: outbound.guard });
  // The production deadline (10 s): a 1 s one failed sends to the local receiver on a busy machine. The timeout
  // test runs a dispatcher of its own with a short deadline.
  dispatcher = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
});

afterAll(async () => {
  await dispatcher?.stop();
  await platform?.close();
  await receiver?.close();
});

beforeEach(() => {
  receiver.requests.length = 0;
  receiver.respond = () => ({ status: 200 });
  outbound.loopback = true;
  platform.clock.set(Date.now());
});

// The sweep is global, so a test's sweep may also send what an earlier test left pending: each test has a
// project and receiver path of its own, and looks only at those.
/** The receiver's requests to one path. */
const requestsTo = (p: string) => receiver.requests.filter((r) => r.path === p);
/** Answer requests to `p` with `a`, everything else with 200. */
const answer = (p: string, a: ReturnType<typeof receiver.respond>) => (receiver.respond = (req) => (req.path === p ? a : { status: 200 }));

async function deliveryRow(id: string) {
  const { rows } = await platform.db.query<Record<string, unknown>>('SELECT * FROM webhook_deliveries WHERE id = $1', [id]);
  return rows[0];
}

async function attemptsOf(id: string) {
  const { rows } = await platform.db.query<Record<string, unknown>>('SELECT * FROM webhook_attempts WHERE delivery_id = $1 ORDER BY id', [id]);
  return rows;
}

const path = (p: string) => receiver.url.replace('/hook', p);

describe('webhook delivery', () => {
  it('POSTs { event, data, sentAt } signed so that Stripe and our verifier accept it, once per event id', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/signed') });
    const succeeded = dispatcher.stats().succeeded;
    const ev = await publishProjectEvent(platform, { projectId, event: 'deploy.succeeded', data: { deployId: 'dep_1', branch: 'main' } });
    await processed(platform);
    await dispatcher.idle();
    expect(dispatcher.stats().succeeded).toBe(succeeded + 1);

    expect(requestsTo('/signed')).toHaveLength(1);
    const req = requestsTo('/signed')[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/signed');
    expect(req.headers['user-agent']).toBe('Service-Webhooks/1.0');
    expect(req.headers['content-type']).toBe('application/json');
    const id = deliveryId(ev.id, ep.id);
    expect(req.headers['service-webhook-id']).toBe(id);
    expect(req.headers['idempotency-key']).toBe(id);
    const header = req.headers['service-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(Number(/^t=(\d+)/.exec(header)![1])).toBe(Math.floor(platform.clock.now() / 1000));

    const body = JSON.parse(req.body);
    expect(body).toEqual({ event: 'deploy.succeeded', data: { deployId: 'dep_1', branch: 'main' }, sentAt: new Date(platform.clock.now()).toISOString() });
    // An independent implementation of the same scheme accepts our header...
    expect(stripe.constructEvent(req.body, header, ep.secret)).toMatchObject({ event: 'deploy.succeeded' });
    expect(() => stripe.constructEvent(req.body, header, 'whsec_other')).toThrow();
    // ...and so does the receiver-side verifier we ship.
    expect(verifyWebhook(req.body, header, ep.secret).data).toEqual({ deployId: 'dep_1', branch: 'main' });

    expect(await deliveryRow(id)).toMatchObject({ status: 'succeeded', last_response_code: 200, last_error: null });

    // The bus may deliver the same event again: the derived delivery id makes it a no-op.
    await publishProjectEvent(platform, { id: ev.id, projectId, event: 'deploy.succeeded', data: { deployId: 'dep_1', branch: 'main' } });
    await processed(platform);
    await dispatcher.idle();
    await dispatcher.sweepOnce();
    expect(requestsTo('/signed')).toHaveLength(1);
  });

  it('follows the subscription rules: empty = all but email.received, family wildcards, email only by name or email.*', async () => {
    const { projectId } = await insertProject(platform);
    await insertEndpoint(platform, { projectId, url: path('/all'), events: [] });
    await insertEndpoint(platform, { projectId, url: path('/deploys'), events: ['deploy.*'] });
    await insertEndpoint(platform, { projectId, url: path('/email'), events: ['email.*'] });
    await insertEndpoint(platform, { projectId, url: path('/byname'), events: ['email.received', 'user.created'] });
    const email = {
      inbox: { id: 'ibx_1', address: 'a@x.test' },
      thread: { id: 'thr_1' },
      message: {
        from: 'b@y.test',
        to: ['a@x.test'],
        subject: 'hi',
        text: 'hello',
        truncated: false,
        attachments: [],
        senderAuthenticated: true,
        rfcMessageId: '<1@y>',
        rawKey: 'raw/1.eml',
      },
    };
    await publishProjectEvent(platform, { projectId, event: 'deploy.failed', data: {} });
    await publishProjectEvent(platform, { projectId, event: 'email.received', data: email });
    await publishProjectEvent(platform, { projectId, event: 'user.created', data: { id: 'u1' } });
    await processed(platform);
    await dispatcher.idle();
    const got = (p: string) =>
      receiver.requests
        .filter((r) => r.path === p)
        .map((r) => JSON.parse(r.body).event)
        .sort();
    expect(got('/all')).toEqual(['deploy.failed', 'user.created']);
    expect(got('/deploys')).toEqual(['deploy.failed']);
    expect(got('/email')).toEqual(['email.received']);
    expect(got('/byname')).toEqual(['email.received', 'user.created']);
    expect(JSON.parse(receiver.requests.find((r) => r.path === '/email')!.body).data).toEqual(email);
  });

  it('sends an inbox event only to the inbox webhookUrl, signed with the inbox secret, never to project endpoints', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/project'), events: ['email.*'] });
    const inboxSecret = 'whsec_inboxsecretinboxsecret';
    await platform.db.query('INSERT INTO inboxes (id, project_id, address, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      `ibx_${projectId}`,
      projectId,
      'support@x.test',
      path('/inbox'),
      inboxSecret,
      new Date(platform.clock.now()),
    ]);
    const email = {
      inbox: { id: `ibx_${projectId}`, address: 'support@x.test' },
      thread: { id: 'thr_1' },
      message: { from: 'b@y.test', to: ['support@x.test'], subject: 's', truncated: false, attachments: [], senderAuthenticated: false, rawKey: 'raw/2.eml' },
    };
    await publishProjectEvent(platform, { projectId, event: 'email.received', data: email, inboxId: `ibx_${projectId}` });
    await processed(platform);
    await dispatcher.idle();
    expect(receiver.requests.map((r) => r.path)).toEqual(['/inbox']);
    const r = receiver.requests[0];
    expect(stripe.constructEvent(r.body, r.headers['service-signature'] as string, inboxSecret)).toMatchObject({ event: 'email.received' });
    expect(() => verifyWebhook(r.body, r.headers['service-signature'] as string, ep.secret)).toThrow();
    const { rows } = await platform.db.query('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]);
    expect(rows).toHaveLength(0);
  });
});

describe('connections to receivers', () => {
  it('keeps connections alive per receiver: 30 deliveries to one receiver need at most its 8 connections', async () => {
    const { projectId } = await insertProject(platform);
    for (let i = 0; i < 30; i++) await insertEndpoint(platform, { projectId, url: path(`/reuse/${i}`) });
    const before = receiver.connections;
    await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    expect(receiver.requests.filter((r) => r.path.startsWith('/reuse/'))).toHaveLength(30);
    expect(receiver.connections - before).toBeLessThanOrEqual(LIMITS.webhook.perReceiverConnections);
  });

  it("reads an answer's body to keep the connection, and drops the connection of one past the cap (the delivery still succeeds)", async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/huge-answer') });
    answer('/huge-answer', { status: 200, body: 'x'.repeat(LIMITS.webhook.answerReadBytes * 4) });
    const ev = await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    expect(await deliveryRow(deliveryId(ev.id, ep.id))).toMatchObject({ status: 'succeeded', last_response_code: 200 });
  });

  it('a slow receiver holds only its own places: deliveries to it are gated, and a fast receiver in the same batch keeps its pace', async () => {
    // Two origins on the one test receiver: localhost (slow answers) and 127.0.0.1 (fast).
    resolveTable.localhost = ['127.0.0.1'];
    const { projectId } = await insertProject(platform);
    const slowUrl = `https://localhost:${receiver.port}`;
    for (let i = 0; i < 16; i++) await insertEndpoint(platform, { projectId, url: `${slowUrl}/iso-slow/${i}` });
    for (let i = 0; i < 16; i++) await insertEndpoint(platform, { projectId, url: path(`/iso-fast/${i}`) });
    let slowInFlight = 0;
    let slowMost = 0;
    const fastAt: number[] = [];
    const slowAnsweredAt: number[] = [];
    receiver.respond = (req) => {
      if (req.path.startsWith('/iso-slow/')) {
        slowMost = Math.max(slowMost, ++slowInFlight);
        setTimeout(() => {
          slowInFlight--;
          slowAnsweredAt.push(Date.now());
        }, 2_000);
        return { status: 200, delayMs: 2_000 };
      }
      if (req.path.startsWith('/iso-fast/')) fastAt.push(Date.now());
      return { status: 200 };
    };
    await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    expect(slowMost).toBeLessThanOrEqual(LIMITS.webhook.perReceiverConnections);
    expect(receiver.requests.filter((r) => r.path.startsWith('/iso-slow/'))).toHaveLength(16);
    expect(fastAt).toHaveLength(16);
    // Every fast delivery went out before the slow receiver had answered its first.
    expect(Math.max(...fastAt)).toBeLessThan(Math.min(...slowAnsweredAt));
  });
});

describe('recording attempts in groups', () => {
  it('records 130 attempts finishing together (groups of many) and keeps the last 100 of the endpoint', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/grouped') });
    await Promise.all(Array.from({ length: 130 }, (_, i) => publishProjectEvent(platform, { projectId, event: 'webhook.test', data: { i } })));
    await processed(platform);
    await dispatcher.idle();
    expect(requestsTo('/grouped')).toHaveLength(130);
    const { rows } = await platform.db.query<{ n: number; ok: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'succeeded')::int AS ok FROM webhook_deliveries WHERE endpoint_id = $1`,
      [ep.id],
    );
    expect(rows[0]).toEqual({ n: 130, ok: 130 });
    const log = await platform.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1', [ep.id]);
    expect(log.rows[0]!.n).toBe(100);
  });
});

describe('retries, dead letter, Retry-After', () => {
  it('retries after ~10 s, ~40 s (±20% jitter) and dead-letters after maxAttempts with its error', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/failing'), maxAttempts: 3 });
    answer('/failing', { status: 500 });
    const before = dispatcher.stats();
    const ev = await publishProjectEvent(platform, { projectId, event: 'order.paid', data: { orderId: 'o1' } });
    await processed(platform);
    await dispatcher.idle();
    const id = deliveryId(ev.id, ep.id);

    let row = await deliveryRow(id);
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_response_code: 500, last_error: 'endpoint answered HTTP 500' });
    const [b0, b1] = LIMITS.webhook.backoffMs;
    let wait = Number(row.next_attempt_at) - platform.clock.now();
    expect(wait).toBeGreaterThanOrEqual(b0 * 0.8);
    expect(wait).toBeLessThanOrEqual(b0 * 1.2);

    // Not due yet: the sweep leaves it alone.
    platform.clock.advance(b0 * 0.8 - 1);
    await dispatcher.sweepOnce();
    expect(await deliveryRow(id)).toMatchObject({ attempts: 1 });
    platform.clock.set(Number(row.next_attempt_at));
    await dispatcher.sweepOnce();
    row = await deliveryRow(id);
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
    wait = Number(row.next_attempt_at) - platform.clock.now();
    expect(wait).toBeGreaterThanOrEqual(b1 * 0.8);
    expect(wait).toBeLessThanOrEqual(b1 * 1.2);

    platform.clock.set(Number(row.next_attempt_at));
    await dispatcher.sweepOnce();
    row = await deliveryRow(id);
    expect(row).toMatchObject({ status: 'dead', attempts: 3, last_error: 'endpoint answered HTTP 500' });
    platform.clock.advance(LIMITS.webhook.backoffMs[4] * 2);
    await dispatcher.sweepOnce();
    expect(requestsTo('/failing')).toHaveLength(3);
    // Same delivery id on every retry: receivers dedupe on it.
    expect(new Set(requestsTo('/failing').map((r) => r.headers['service-webhook-id']))).toEqual(new Set([id]));
    const log = await attemptsOf(id);
    expect(log.map((a) => [a.attempt, a.status, a.response_code])).toEqual([
      [1, 'failed', 500],
      [2, 'failed', 500],
      [3, 'failed', 500],
    ]);
    expect(log[2].next_attempt_at).toBeNull();
    // Counted by outcome for GET /metrics: two attempts that will be retried, one that dead-lettered.
    const after = dispatcher.stats();
    expect([after.retrying - before.retrying, after.dead - before.dead, after.succeeded - before.succeeded]).toEqual([2, 1, 0]);
  });

  it('jitter spreads retries and stays inside ±20% of every step of the schedule', async () => {
    const { backoffMs } = await import('./backoff.ts');
    const table = LIMITS.webhook.backoffMs;
    for (let attempt = 1; attempt <= 8; attempt++) {
      const base = table[Math.min(attempt, table.length) - 1];
      const seen = new Set<number>();
      for (let i = 0; i < 200; i++) {
        const d = backoffMs(attempt);
        expect(d).toBeGreaterThanOrEqual(base * 0.8);
        expect(d).toBeLessThanOrEqual(base * 1.2);
        seen.add(d);
      }
      expect(seen.size).toBeGreaterThan(50);
    }
    expect(backoffMs(6, () => 0.5)).toBe(table[4]); // 43 min repeats after the fifth
  });

  it('honours a longer Retry-After on 429 and 503, capped at 24 h; a shorter one does not shorten the backoff', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/busy') });
    answer('/busy', { status: 429, headers: { 'Retry-After': '3600' } });
    const ev = await publishProjectEvent(platform, { projectId, event: 'user.deleted', data: {} });
    await processed(platform);
    await dispatcher.idle();
    const id = deliveryId(ev.id, ep.id);
    expect(Number((await deliveryRow(id)).next_attempt_at) - platform.clock.now()).toBe(3_600_000);

    answer('/busy', { status: 503, headers: { 'Retry-After': '1' } });
    platform.clock.advance(3_600_000);
    await dispatcher.sweepOnce();
    expect(await deliveryRow(id)).toMatchObject({ attempts: 2, last_response_code: 503 });
    const wait = Number((await deliveryRow(id)).next_attempt_at) - platform.clock.now();
    expect(wait).toBeGreaterThanOrEqual(LIMITS.webhook.backoffMs[1] * 0.8);

    answer('/busy', { status: 503, headers: { 'Retry-After': String(7 * 24 * 3600) } });
    platform.clock.advance(wait);
    await dispatcher.sweepOnce();
    expect(await deliveryRow(id)).toMatchObject({ attempts: 3 });
    expect(Number((await deliveryRow(id)).next_attempt_at) - platform.clock.now()).toBe(24 * 3600 * 1000);
  });

  it('treats a timeout as a failed attempt', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/slow') });
    answer('/slow', { status: 200, hang: true });
    // A receiver that never answers meets a deadline of its own dispatcher's: the delivery is put in place and
    // swept by that one (the shared dispatcher neither consumes it nor sweeps).
    const id = `dlv_slow${projectId}`;
    const now = platform.clock.now();
    await platform.db.query(
      `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, attempts, max_attempts, attempt_seq, next_attempt_at, created_at, updated_at)
       VALUES ($1, $2, $3, $1, 'user.created', '{}', 'pending', 0, 6, 0, $4, $4, $4)`,
      [id, projectId, ep.id, new Date(now)],
    );
    const short = await startWebhookDispatcher(platform, { sweepIntervalMs: false, attemptTimeoutMs: 300 });
    try {
      await short.sweepOnce();
    } finally {
      await short.stop();
    }
    expect(await deliveryRow(id)).toMatchObject({ status: 'pending', attempts: 1, last_error: 'timed out after 0.3 s' });
  });

  it('retries a delivery whose sender died mid-send (lease ran out), and one left pending by a stopped processor', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/restart') });
    const now = platform.clock.now();
    const ins = (id: string, status: string, lease: number | null) =>
      platform.db.query(
        `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, attempts, max_attempts, attempt_seq, next_attempt_at, lease_until, lease_token, created_at, updated_at)
         VALUES ($1, $2, $3, $1, 'user.created', '{}', $4, 0, 6, $5, $6, $7, 'old', $6, $6)`,
        [id, projectId, ep.id, status, status === 'sending' ? 1 : 0, new Date(now), lease === null ? null : new Date(lease)],
      );
    await ins(`dlv_a${projectId}`, 'sending', now + 30_000);
    await ins(`dlv_b${projectId}`, 'pending', null);

    // A fresh processor after a restart: the pending one goes now, the leased one only once its lease ran out.
    await dispatcher.stop();
    dispatcher = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
    await dispatcher.sweepOnce();
    expect(requestsTo('/restart').map((r) => r.headers['service-webhook-id'])).toEqual([`dlv_b${projectId}`]);
    platform.clock.advance(30_000);
    await dispatcher.sweepOnce();
    expect(requestsTo('/restart').map((r) => r.headers['service-webhook-id'])).toEqual([`dlv_b${projectId}`, `dlv_a${projectId}`]);
    expect(await deliveryRow(`dlv_a${projectId}`)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });
});

describe('signing secrets during rotation', () => {
  it('carries two v1 values while the previous secret overlaps (24 h), then only the new one', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/rotating'), secret: 'whsec_newnewnewnewnewnewnew' });
    const until = platform.clock.now() + LIMITS.webhook.rotationOverlapMs;
    await platform.db.query('UPDATE webhook_endpoints SET previous_secret = $2, previous_secret_until = $3 WHERE id = $1', [
      ep.id,
      'whsec_oldoldoldoldoldoldold',
      new Date(until),
    ]);
    await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    const first = requestsTo('/rotating')[0]!;
    const header = first.headers['service-signature'] as string;
    expect(header.match(/v1=/g)).toHaveLength(2);
    expect(stripe.constructEvent(first.body, header, 'whsec_newnewnewnewnewnewnew')).toBeTruthy();
    expect(stripe.constructEvent(first.body, header, 'whsec_oldoldoldoldoldoldold')).toBeTruthy();
    verifyWebhook(first.body, header, 'whsec_oldoldoldoldoldoldold', { now: platform.clock.now() });

    platform.clock.set(until);
    await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    const second = requestsTo('/rotating')[1]!;
    const h2 = second.headers['service-signature'] as string;
    expect(h2.match(/v1=/g)).toHaveLength(1);
    expect(() => verifyWebhook(second.body, h2, 'whsec_oldoldoldoldoldoldold', { now: platform.clock.now() })).toThrow();
    verifyWebhook(second.body, h2, 'whsec_newnewnewnewnewnewnew', { now: platform.clock.now() });
  });
});

describe('SSRF at send time', () => {
  const forms = (port: number) => [
    `https://127.0.0.1:${port}/x`,
    `https://localhost:${port}/x`,
    `https://0x7f.1:${port}/x`,
    `https://2130706433:${port}/x`,
    `https://017700000001:${port}/x`,
    `https://[::1]:${port}/x`,
    `https://[::ffff:127.0.0.1]:${port}/x`,
    `https://[64:ff9b::7f00:1]:${port}/x`,
    `https://[2002:7f00:1::]:${port}/x`,
    `https://169.254.169.254:${port}/latest/meta-data`,
    `https://rebind-to-loopback.test:${port}/x`,
    `https://rebind-mixed.test:${port}/x`,
    `https://rebind-metadata.test:${port}/x`,
  ];

  it('refuses private and loopback targets in every form, including names that resolve (or rebind) to them', async () => {
    resolveTable['rebind-to-loopback.test'] = ['127.0.0.1'];
    resolveTable['rebind-mixed.test'] = ['93.184.216.34', '127.0.0.1'];
    resolveTable['rebind-metadata.test'] = ['169.254.169.254'];
    outbound.loopback = false;
    const { projectId } = await insertProject(platform);
    const eps = [];
    for (const url of forms(receiver.port)) eps.push({ url, ...(await insertEndpoint(platform, { projectId, url })) });
    const ev = await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    expect(receiver.requests).toHaveLength(0);
    for (const ep of eps) {
      const row = await deliveryRow(deliveryId(ev.id, ep.id));
      expect({ url: ep.url, status: row.status, error: String(row.last_error).startsWith('refused:') }).toEqual({
        url: ep.url,
        status: 'pending',
        error: true,
      });
    }
  });

  it('does not follow a redirect (to the cloud metadata address): a 3xx is a failure', async () => {
    const { projectId } = await insertProject(platform);
    const ep = await insertEndpoint(platform, { projectId, url: path('/redirect') });
    answer('/redirect', { status: 302, headers: { Location: 'https://169.254.169.254/latest/meta-data/' } });
    const ev = await publishProjectEvent(platform, { projectId, event: 'webhook.test', data: {} });
    await processed(platform);
    await dispatcher.idle();
    expect(requestsTo('/redirect')).toHaveLength(1);
    expect(await deliveryRow(deliveryId(ev.id, ep.id))).toMatchObject({
      status: 'pending',
      last_response_code: 302,
      last_error: 'redirect (302) not followed',
    });
  });
});
