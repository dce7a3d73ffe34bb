import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import { BusUnavailableError } from '../../platform/ports/bus.ts';
import { LIMITS } from '../../schemas/limits.ts';
import {
  bearer,
  buildTestApi,
  createCliToken,
  createKey,
  createProject,
  sessionHeaders,
  signUpAndSignIn,
  type SignedInUser,
} from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { processed } from '../../test/support/platform.ts';
import { startWebhookDispatcher, type WebhookDispatcher } from '../../processor/webhooks/webhook-dispatcher.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { steerableGuard, type SteerableGuard } from '../../test/support/outbound-guard.ts';

const stripe = Stripe.webhooks;
const resolveTable: Record<string, string[]> = {
  'public.test': ['93.184.216.34'],
  'private.test': ['10.1.2.3'],
  'mixed.test': ['93.184.216.34', '::1'],
  'metadata.test': ['169.254.169.254'],
};

let receiver: HttpsReceiver;
let api: Awaited<ReturnType<typeof buildTestApi>>;
let app: FastifyInstance;
let platform: Platform;
let dispatcher: WebhookDispatcher;
const clock = new ManualClock(Date.now());
let owner: SignedInUser;
let outbound: SteerableGuard;

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
  outbound.table = resolveTable;
  api = await buildTestApi({
    overrides: {
      clock,
      outbound: outbound.guard,
    },
  });
  app = api.app;
  platform = api.platform;
  dispatcher = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
  owner = await signUpAndSignIn(app, platform);
});

afterAll(async () => {
  await dispatcher?.stop();
  await api?.close();
  await receiver?.close();
});

beforeEach(() => {
  receiver.requests.length = 0;
  receiver.respond = () => ({ status: 200 });
  outbound.loopback = true;
  clock.set(Date.now());
});

// The sweep is global, so a test's sweep may also send what an earlier test left pending: each test's
// endpoints take a receiver path named after its project, and the test looks only at that path.
afterEach(async () => {
  await processed(platform);
  await dispatcher.idle();
});
/** The receiver URL for one project's endpoints, and the requests that reached it. */
const hookUrl = (slug: string) => receiver.url.replace(/\/hook$/, `/${slug}`);
const requestsTo = (slug: string) => receiver.requests.filter((r) => r.path === `/${slug}`);
/** Answer one project's path with `a`, everything else with 200. */
const answer = (slug: string, a: ReturnType<typeof receiver.respond>) => (receiver.respond = (req) => (req.path === `/${slug}` ? a : { status: 200 }));

const S = () => sessionHeaders(owner.cookie);

async function create(slug: string, payload: Record<string, unknown>, headers = S()) {
  return app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks`, headers, payload });
}

describe('endpoint management', () => {
  it('creates an endpoint, shows its whsec_ secret once, then lists, reads, updates and deletes it', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const res = await create(slug, { url: 'https://public.test/hooks/in', events: ['deploy.*', 'user.created'] });
    expect(res.statusCode).toBe(201);
    const { endpoint } = res.json();
    expect(endpoint).toMatchObject({
      url: 'https://public.test/hooks/in',
      events: ['deploy.*', 'user.created'],
      maxAttempts: 6,
      previousSecretExpiresAt: null,
    });
    expect(endpoint.id).toMatch(/^whk_/);
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const list = await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks`, headers: S() });
    expect(list.json().endpoints).toHaveLength(1);
    expect(list.body).not.toContain(endpoint.secret);
    const read = await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}`, headers: S() });
    expect(read.json().endpoint).not.toHaveProperty('secret');

    const patch = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/webhooks/${endpoint.id}`,
      headers: S(),
      payload: { events: [], maxAttempts: 2 },
    });
    expect(patch.statusCode).toBe(200);
    expect(patch.json().endpoint).toMatchObject({ events: [], maxAttempts: 2, url: 'https://public.test/hooks/in' });
    const badPatch = await app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/webhooks/${endpoint.id}`,
      headers: S(),
      payload: { url: 'https://private.test/' },
    });
    expect(badPatch.json().error).toBe('url_private_host');

    const del = await app.inject({ method: 'DELETE', url: `/v1/projects/${slug}/webhooks/${endpoint.id}`, headers: S() });
    expect(del.statusCode).toBe(204);
    const gone = await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}`, headers: S() });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toBe('not_found');
  });

  it('refuses http, credentials in the URL, unknown events and maxAttempts outside 1-10', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ url: 'http://public.test/x' }, 400, 'url_not_https'],
      [{ url: 'ftp://public.test/x' }, 400, 'url_not_https'],
      [{ url: 'https://user:pw@public.test/x' }, 400, 'url_has_credentials'],
      [{ url: 'https://token@public.test/x' }, 400, 'url_has_credentials'],
      [{ url: 'not a url' }, 400, 'invalid_request'],
      [{ url: 'https://nowhere.test/x' }, 400, 'url_unresolvable'],
      [{ url: 'https://public.test/x', events: ['deploy.started'] }, 400, 'unknown_event'],
      [{ url: 'https://public.test/x', events: ['nothing.*'] }, 400, 'unknown_event'],
      [{ url: 'https://public.test/x', events: ['*'] }, 400, 'unknown_event'],
      [{ url: 'https://public.test/x', maxAttempts: 0 }, 400, 'invalid_request'],
      [{ url: 'https://public.test/x', maxAttempts: 11 }, 400, 'invalid_request'],
    ];
    for (const [payload, status, code] of cases) {
      const res = await create(slug, payload);
      expect({ payload, status: res.statusCode, code: res.json().error }).toEqual({ payload, status, code });
    }
    const ok = await create(slug, { url: 'https://public.test/x', events: ['email.received', 'db.row.*', 'db.*'], maxAttempts: 10 });
    expect(ok.statusCode).toBe(201);
  });

  it('refuses every non-public host form at creation (SSRF table)', async () => {
    outbound.loopback = false;
    const { slug } = await createProject(app, owner.cookie);
    const hosts = [
      '127.0.0.1',
      '127.1.2.3',
      'localhost',
      'api.localhost',
      '0x7f.1',
      '2130706433',
      '017700000001',
      '0177.0.0.1',
      '0x7f000001',
      '127.1',
      '0.0.0.0',
      '0',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '192.0.0.8',
      '192.0.2.1',
      '198.51.100.7',
      '203.0.113.9',
      '198.18.0.1',
      '224.0.0.1',
      '239.255.255.250',
      '240.0.0.1',
      '255.255.255.255',
      '[::1]',
      '[::]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[::ffff:a9fe:a9fe]',
      '[::ffff:10.0.0.1]',
      '[64:ff9b::7f00:1]',
      '[64:ff9b::a00:1]',
      '[2002:7f00:1::]',
      '[2002:a9fe:a9fe::1]',
      '[2001::1]',
      '[2001:db8::1]',
      '[fc00::1]',
      '[fd12:3456::1]',
      '[fe80::1]',
      '[ff02::1]',
      '[100::1]',
      'private.test',
      'mixed.test',
      'metadata.test',
    ];
    for (const host of hosts) {
      const res = await create(slug, { url: `https://${host}/hook` });
      expect({ host, status: res.statusCode, code: res.json().error }).toEqual({ host, status: 400, code: 'url_private_host' });
    }
    for (const host of ['93.184.216.34', '[2606:4700:4700::1111]', '[64:ff9b::5db8:d822]', '[::ffff:93.184.216.34]', 'public.test']) {
      const res = await create(slug, { url: `https://${host}/hook` });
      expect({ host, status: res.statusCode }).toEqual({ host, status: 201 });
    }
  });
});

describe('who reaches the webhook routes (§5.2 rule 4)', () => {
  it('a member only (session; the CLI may list endpoints, read deliveries and replay), except POST .../test which a key with webhooks:send may call', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const sendKey = await createKey(app, owner.cookie, slug, {
      kind: 'live',
      scopes: ['webhooks:send', 'project:read', 'errors:read', 'errors:write', 'deploys:read', 'deploys:write', 'keys:read'],
    });
    const readKey = await createKey(app, owner.cookie, slug, { kind: 'live', scopes: ['project:read'] });
    const cli = await createCliToken(app, owner.cookie);
    const { endpoint } = (await create(slug, { url: 'https://public.test/a' })).json();
    const other = await signUpAndSignIn(app, platform);
    const otherProject = await createProject(app, other.cookie);
    const otherKey = await createKey(app, other.cookie, otherProject.slug, { kind: 'live', scopes: ['webhooks:send'] });

    const sessionOnly = [
      ['POST', `/v1/projects/${slug}/webhooks`, { url: 'https://public.test/b' }],
      ['GET', `/v1/projects/${slug}/webhooks/${endpoint.id}`],
      ['PATCH', `/v1/projects/${slug}/webhooks/${endpoint.id}`, { maxAttempts: 3 }],
      ['POST', `/v1/projects/${slug}/webhooks/${endpoint.id}/rotate-secret`],
      ['DELETE', `/v1/projects/${slug}/webhooks/${endpoint.id}`],
    ] as const;
    // The CLI reads the endpoints and their delivery log and replays (cx webhooks); a key never does.
    const member = [
      ['GET', `/v1/projects/${slug}/webhooks`, 200],
      ['GET', `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`, 200],
      ['POST', `/v1/projects/${slug}/webhooks/deliveries/dlv_x/replay`, 404],
    ] as const;
    for (const [method, url, status] of member) {
      expect((await app.inject({ method, url, headers: bearer(cli.token) })).statusCode, `${method} ${url}`).toBe(status);
      expect((await app.inject({ method, url, headers: bearer(sendKey.token) })).statusCode, `${method} ${url}`).toBe(403);
    }
    for (const [method, url, payload] of sessionOnly) {
      for (const [who, headers] of [
        ['full key', bearer(sendKey.token)],
        ['cli', bearer(cli.token)],
      ] as const) {
        const res = await app.inject({ method, url, headers, payload });
        expect({ who, method, url, status: res.statusCode }).toEqual({ who, method, url, status: 403 });
      }
      const none = await app.inject({ method, url, payload });
      expect({ method, url, status: none.statusCode }).toEqual({ method, url, status: 401 });
    }

    const test = (headers: Record<string, string>) => app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers });
    expect((await test(bearer(sendKey.token))).statusCode).toBe(202);
    expect((await test(S())).statusCode).toBe(202);
    const noScope = await test(bearer(readKey.token));
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json().error).toBe('insufficient_scope');
    expect([403, 404]).toContain((await test(bearer(otherKey.token))).statusCode);
    expect((await test({})).statusCode).toBe(401);
    // Another user's session does not reach this project.
    expect((await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks`, headers: sessionHeaders(other.cookie) })).statusCode).toBe(404);
    await processed(platform);
    await dispatcher.idle();
  });
});

describe('end to end: test event, delivery log, rotation, dead letter and replay', () => {
  it('POST .../test delivers a webhook.test signed with the secret shown at creation', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const key = await createKey(app, owner.cookie, slug, { kind: 'live', scopes: ['webhooks:send'] });
    const { endpoint } = (await create(slug, { url: hookUrl(slug), events: ['webhook.test'] })).json();
    const res = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: bearer(key.token) });
    expect(res.statusCode).toBe(202);
    await processed(platform);
    await dispatcher.idle();
    expect(requestsTo(slug)).toHaveLength(1);
    const r = requestsTo(slug)[0]!;
    expect(stripe.constructEvent(r.body, r.headers['service-signature'] as string, endpoint.secret)).toMatchObject({
      event: 'webhook.test',
      data: { project: slug },
    });

    const log = await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`, headers: S() });
    expect(log.json().deliveries).toEqual([
      expect.objectContaining({
        deliveryId: r.headers['service-webhook-id'],
        eventId: res.json().event.id,
        event: 'webhook.test',
        attempt: 1,
        status: 'succeeded',
        responseCode: 200,
        error: null,
        deliveryStatus: 'succeeded',
      }),
    ]);
  });

  it('POST .../test while the bus is down answers 503 unavailable with Retry-After, not a 500', async () => {
    const { slug } = await createProject(app, owner.cookie);
    await create(slug, { url: receiver.url, events: ['webhook.test'] });
    const publish = platform.bus.publish;
    platform.bus.publish = async () => {
      throw new BusUnavailableError('kafka unreachable');
    };
    try {
      const res = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: S() });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ error: 'unavailable' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      platform.bus.publish = publish;
    }
  });

  it('rotate-secret: new secret shown once; both sign for 24 h (two v1), then only the new one', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const { endpoint } = (await create(slug, { url: hookUrl(slug) })).json();
    const rot = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/${endpoint.id}/rotate-secret`, headers: S() });
    expect(rot.statusCode).toBe(200);
    const rotated = rot.json().endpoint;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.previousSecretExpiresAt)).toBe(clock.now() + LIMITS.webhook.rotationOverlapMs);

    await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: S() });
    await processed(platform);
    await dispatcher.idle();
    const r1 = requestsTo(slug)[0]!;
    const h1 = r1.headers['service-signature'] as string;
    expect(h1.match(/v1=/g)).toHaveLength(2);
    expect(stripe.constructEvent(r1.body, h1, endpoint.secret)).toBeTruthy();
    expect(stripe.constructEvent(r1.body, h1, rotated.secret)).toBeTruthy();

    clock.advance(LIMITS.webhook.rotationOverlapMs);
    await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: S() });
    await processed(platform);
    await dispatcher.idle();
    const r2 = requestsTo(slug)[1]!;
    const h2 = r2.headers['service-signature'] as string;
    expect(h2.match(/v1=/g)).toHaveLength(1);
    expect(verifyWebhook(r2.body, h2, rotated.secret, { now: clock.now() }).event).toBe('webhook.test');
    expect(() => verifyWebhook(r2.body, h2, endpoint.secret, { now: clock.now() })).toThrow();
  });

  it('a dead delivery stays in the log with its error; replay gives it a fresh budget under the same id', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const { endpoint } = (await create(slug, { url: hookUrl(slug), maxAttempts: 2 })).json();
    answer(slug, { status: 500 });
    await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: S() });
    await processed(platform);
    await dispatcher.idle();
    const logUrl = `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`;
    // while pending, each attempt carries the delivery's own due time, which the console says once (issue 39 §5)
    const pending = (await app.inject({ method: 'GET', url: logUrl, headers: S() })).json().deliveries;
    expect(pending[0]).toMatchObject({ attempt: 1, deliveryStatus: 'pending' });
    expect(Date.parse(pending[0].deliveryNextAttemptAt)).toBeGreaterThan(clock.now());
    clock.advance(LIMITS.webhook.backoffMs[0] * 1.2);
    await dispatcher.sweepOnce();
    const log = (await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`, headers: S() })).json().deliveries;
    expect(
      log.map((a: { attempt: number; status: string; error: string; deliveryStatus: string }) => [a.attempt, a.status, a.error, a.deliveryStatus]),
    ).toEqual([
      [2, 'failed', 'endpoint answered HTTP 500', 'dead'],
      [1, 'failed', 'endpoint answered HTTP 500', 'dead'],
    ]);
    expect(log.map((a: { deliveryNextAttemptAt: string | null }) => a.deliveryNextAttemptAt)).toEqual([null, null]);
    const id = log[0].deliveryId;

    answer(slug, { status: 204 });
    const replay = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/deliveries/${id}/replay`, headers: S() });
    expect(replay.statusCode).toBe(200);
    expect(replay.json().delivery).toMatchObject({ id, status: 'pending', attempts: 0, maxAttempts: 2, lastError: 'endpoint answered HTTP 500' });
    await dispatcher.sweepOnce();
    expect(requestsTo(slug).map((r) => r.headers['service-webhook-id'])).toEqual([id, id, id]);
    const after = (await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`, headers: S() })).json().deliveries;
    expect(after[0]).toMatchObject({ deliveryId: id, attempt: 3, status: 'succeeded', responseCode: 204, deliveryStatus: 'succeeded' });

    const other = await createProject(app, owner.cookie);
    expect((await app.inject({ method: 'POST', url: `/v1/projects/${other.slug}/webhooks/deliveries/${id}/replay`, headers: S() })).statusCode).toBe(404);
  });

  it('keeps only the last 100 attempts per endpoint', async () => {
    const { slug } = await createProject(app, owner.cookie);
    const { endpoint } = (await create(slug, { url: hookUrl(slug), maxAttempts: 1 })).json();
    for (let i = 0; i < 104; i++) await app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks/test`, headers: S() });
    await processed(platform);
    await dispatcher.idle();
    expect(requestsTo(slug)).toHaveLength(104);
    const log = (await app.inject({ method: 'GET', url: `/v1/projects/${slug}/webhooks/${endpoint.id}/deliveries`, headers: S() })).json().deliveries;
    expect(log).toHaveLength(100);
    const { rows } = await platform.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_attempts WHERE endpoint_id = $1', [endpoint.id]);
    expect(rows[0].n).toBe(100);
    expect(log[0].deliveryId).toBe(requestsTo(slug)[103]!.headers['service-webhook-id']);
  });
});
