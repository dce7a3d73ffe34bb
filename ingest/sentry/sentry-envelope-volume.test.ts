import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageMonth } from '../../domain/usage-month.ts';
import { dsnPublicKey } from '../../platform/sentry-dsn.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { httpRequest } from '../../test/support/http-request.ts';
import { addLiveSite, createIngestProject, projectNumberOf, setUsage, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { recordSdkEnvelopes, type SdkEnvelopes } from './fixtures/sdk-envelopes.ts';
import { UNKEPT_HEADER } from './envelope-limits.ts';

/**
 * Sentry's envelope route at production volume (issue 40): each kind of item limited on its own, answers that name
 * their categories, per-item sizes, and what SDKs send beside errors published as one client-items message. The
 * envelopes are the real SDK's (fixtures/sdk-envelopes.ts). Also our own session path, `POST /v1/sessions/i`.
 */
let edge: TestEdge;
let sdk: SdkEnvelopes;

beforeAll(async () => {
  [edge, sdk] = await Promise.all([startTestEdge({ SITES_DOMAIN: 'sites.test' }), recordSdkEnvelopes()]);
});
afterAll(async () => edge?.close());

type P = IngestProject & { number: string };
async function project(opts: Parameters<typeof createIngestProject>[1] = {}): Promise<P> {
  const p = await createIngestProject(edge.platform, opts);
  const number = await projectNumberOf(edge.platform, p.projectId);
  await edge.settingsRefreshed();
  return { ...p, number };
}

const UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
async function post(p: P, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(`${edge.base}/api/${p.number}/envelope/?sentry_key=${dsnPublicKey(p.ingestKey)}&sentry_version=7`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': UA, ...headers },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, limits: res.headers.get('x-sentry-rate-limits'), json: text ? JSON.parse(text) : undefined };
}

const line = (o: unknown) => JSON.stringify(o);
const eventItem = (message: string) => [line({ type: 'event' }), line({ event_id: 'c'.repeat(32), message, platform: 'javascript' })];
const sessionItem = (sid: string) => [line({ type: 'session' }), line({ sid, init: true, started: '2026-11-26T10:00:00.000Z', status: 'ok', errors: 0 })];
const envelope = (...items: string[][]) => [line({}), ...items.flat()].join('\n');

const errorsOf = (p: P) =>
  edge.bus
    .batches()
    .filter((b) => b.projectId === p.projectId)
    .flatMap((b) => b.events);
const itemsOf = (p: P) => edge.bus.clientItems().filter((m) => m.projectId === p.projectId);
const sessionsOf = (p: P) => itemsOf(p).flatMap((m) => m.sessions ?? []);
const counters = async () => (await (await fetch(`${edge.base}/api/health`)).json()).counters as Record<string, number>;
const errorHits = () => [...edge.limiter.hits].filter(([k]) => k.startsWith('errors:')).reduce((n, [, v]) => n + v, 0);

describe("Sentry's envelopes at volume: each kind limited on its own", () => {
  it("250 session envelopes (the real SDK's) then an error envelope: every one 200, the error stored, the sessions published", async () => {
    const p = await project();
    const before = errorHits();
    for (let i = 0; i < 250; i++) {
      const res = await post(p, sdk.session);
      expect(res.status).toBe(200);
      expect(res.limits).toBe(UNKEPT_HEADER);
    }
    expect(errorHits()).toBe(before);
    const res = await post(p, envelope(eventItem('after the sessions')));
    expect(res).toMatchObject({ status: 200, json: { id: 'c'.repeat(32) } });
    expect(errorsOf(p).map((e) => e.message)).toEqual(['after the sessions']);
    expect(sessionsOf(p)).toHaveLength(250);
  });

  it('one client-items message per request: the User-Agent, a unique batchId, the origin host and receive time, the items mapped', async () => {
    const p = await project();
    const t0 = Date.now();
    const all = [sdk.session, sdk.sessions, sdk.checkInCrontab, sdk.feedback, sdk.userReport, sdk.clientReport].map((e) => e.split('\n').slice(1).join('\n'));
    expect((await post(p, `{}\n${all.join('\n')}`, { origin: 'https://app.example.com' })).status).toBe(200);
    expect((await post(p, sdk.session)).status).toBe(200);
    const [first, second] = itemsOf(p);
    expect(first).toMatchObject({ v: 1, projectId: p.projectId, originHost: 'app.example.com', userAgent: UA });
    expect(first!.receivedAt).toBeGreaterThanOrEqual(t0);
    expect(first!.sessions).toEqual([expect.objectContaining({ did: 'user-7', status: 'exited', init: true, release: 'abc1234', environment: 'production' })]);
    expect(first!.sessionAggregates).toHaveLength(2);
    expect(first!.checkIns).toEqual([expect.objectContaining({ monitorSlug: 'nightly-report', status: 'in_progress', monitorConfig: expect.any(Object) })]);
    expect(first!.feedback!.map((f) => f.source)).toEqual(['feedback', 'user_report']);
    expect(second!.originHost).toBeNull();
    expect(second!.batchId).not.toBe(first!.batchId);
    // A client report alone publishes nothing; what the SDK dropped is counted.
    const before = await counters();
    expect((await post(p, sdk.clientReport)).status).toBe(200);
    expect(itemsOf(p)).toHaveLength(2);
    expect((await counters()).dropped_sdk_discarded_ratelimit_backoff - (before.dropped_sdk_discarded_ratelimit_backoff ?? 0)).toBe(4);
  });

  it('a limited error budget names error;default and never silences sessions; a mixed envelope keeps its session', async () => {
    const p = await project();
    for (let i = 0; i < LIMITS.errorIngestRate.perKeyAndIpPerMinute; i++) expect((await post(p, envelope(eventItem(`e${i}`)))).status).toBe(200);
    const limited = await post(p, envelope(eventItem('one too many')));
    expect(limited).toMatchObject({ status: 429, json: { error: 'rate_limited' } });
    expect(limited.limits).toMatch(/^\d+:error;default:key:rate_limited, 86400:transaction;span;replay;/);
    const session = await post(p, sdk.session);
    expect(session).toMatchObject({ status: 200, limits: UNKEPT_HEADER });
    const mixed = await post(p, envelope(eventItem('lost to the limit'), sessionItem('kept')));
    expect(mixed.status).toBe(200);
    expect(mixed.limits).toMatch(/^\d+:error;default:key:rate_limited, 86400:/);
    expect(errorsOf(p)).toHaveLength(LIMITS.errorIngestRate.perKeyAndIpPerMinute);
    expect(sessionsOf(p).map((s) => s.sid)).toContain('kept');
  });

  it('limited sessions name session only and never refuse errors', async () => {
    const p = await project();
    expect((await post(p, sdk.session)).status).toBe(200);
    edge.limiter.hits.set(`sessions:ki:${p.keyId}:127.0.0.1`, LIMITS.sessionIngestRate.perKeyAndIpPerMinute);
    const limited = await post(p, sdk.session);
    expect(limited).toMatchObject({ status: 429, json: { error: 'rate_limited' } });
    expect(limited.limits).toMatch(/^60:session:key:rate_limited, 86400:/);
    expect((await post(p, envelope(eventItem('still stored')))).status).toBe(200);
    expect(errorsOf(p).map((e) => e.message)).toEqual(['still stored']);
    expect(sessionsOf(p)).toHaveLength(1);
  });

  it('past the monthly errors cap: the event is refused as usage_exceeded for the project, sessions are taken', async () => {
    const p = await project();
    await setUsage(edge.platform, p.projectId, usageMonth(edge.platform.clock.now()), 'production', LIMITS.errorCaps.productionPerMonth);
    await edge.settingsRefreshed();
    const origin = { origin: 'https://app.example.com' };
    const capped = await post(p, envelope(eventItem('over the cap')), origin);
    expect(capped).toMatchObject({ status: 429, json: { error: 'errors_capped' } });
    expect(capped.limits).toMatch(/^\d+:error;default:project:usage_exceeded, 86400:/);
    expect((await post(p, sdk.session, origin)).status).toBe(200);
    const mixed = await post(p, envelope(eventItem('over the cap'), sessionItem('s-capped')), origin);
    expect(mixed.status).toBe(200);
    expect(mixed.limits).toMatch(/:error;default:project:usage_exceeded, /);
    expect(errorsOf(p)).toHaveLength(0);
    expect(sessionsOf(p)).toHaveLength(2);
  });

  it('feedback and check-ins have limits of their own', async () => {
    const p = await project();
    for (let i = 0; i < LIMITS.feedbackIngestRate.perKeyAndIpPerMinute; i++) expect((await post(p, sdk.feedback)).status).toBe(200);
    const limited = await post(p, sdk.feedback);
    expect(limited.status).toBe(429);
    expect(limited.limits).toMatch(/^\d+:feedback:key:rate_limited, /);
    expect((await post(p, sdk.checkInOk)).status).toBe(200);
    expect((await post(p, envelope(eventItem('not limited by feedback')))).status).toBe(200);
  });
});

describe("Sentry's envelopes: what is never kept, and per-item sizes", () => {
  it('transactions, spans, replays, profiles, logs and metrics: 200, a day-long limit on their categories, never charged to errors', async () => {
    const p = await project();
    const before = errorHits();
    const types = ['transaction', 'span', 'replay_event', 'replay_recording', 'profile', 'profile_chunk', 'log', 'otel_log', 'metric', 'statsd'];
    const res = await post(p, envelope(...types.map((type) => [line({ type }), line({ x: 1 })])));
    expect(res).toMatchObject({ status: 200, limits: UNKEPT_HEADER });
    expect(UNKEPT_HEADER).toBe(
      `${LIMITS.sentryIngest.unkeptRetryAfterSec}:transaction;span;replay;replay_video;profile;log_item;otel_log;trace_metric;statsd;metric_bucket;attachment:organization:not_kept`,
    );
    expect(errorHits()).toBe(before);
    // On refusals too: a fresh SDK learns from any first answer.
    expect((await post({ ...p, number: '0' }, sdk.session)).limits).toBe(UNKEPT_HEADER);
  });

  it("a 5 MB attachment beside an event (the real SDK's envelope), as sent and gzipped: the event is stored, the attachment dropped and counted", async () => {
    const p = await project();
    expect(sdk.eventWithAttachment.length).toBeGreaterThan(5 * 1024 * 1024);
    const before = await counters();
    expect((await post(p, sdk.eventWithAttachment)).status).toBe(200);
    expect((await post(p, gzipSync(sdk.eventWithAttachment), { 'content-encoding': 'gzip' })).status).toBe(200);
    expect(errorsOf(p).map((e) => e.message)).toEqual(['boom', 'boom']);
    expect((await counters()).dropped_item_attachment - (before.dropped_item_attachment ?? 0)).toBe(2);
  });

  it('an item past its own size is dropped and counted; the rest of the envelope is kept', async () => {
    const p = await project();
    const before = await counters();
    const big = [line({ type: 'event' }), line({ message: 'x'.repeat(LIMITS.sentryIngest.itemBytes.event + 1) })];
    const res = await post(p, envelope(big, eventItem('small one'), sessionItem('beside')));
    expect(res.status).toBe(200);
    expect(errorsOf(p).map((e) => e.message)).toEqual(['small one']);
    expect(sessionsOf(p).map((s) => s.sid)).toEqual(['beside']);
    expect((await counters()).dropped_oversize_event - (before.dropped_oversize_event ?? 0)).toBe(1);
    // Past 20 MB once inflated: 413.
    const bomb = gzipSync(Buffer.alloc(LIMITS.sentryIngest.maxDecompressedBytes + 1024, 0x20));
    expect(await post(p, bomb, { 'content-encoding': 'gzip' })).toMatchObject({ status: 413, json: { error: 'payload_too_large' } });
  });
});

describe('POST /v1/sessions/i', () => {
  const sessionUpdate = (sid: string, over: Record<string, unknown> = {}) => ({
    sid,
    init: true,
    status: 'ok',
    errors: 0,
    started: Date.now() - 1000,
    timestamp: Date.now(),
    release: '0123456789abcdef0123456789abcdef01234567',
    ...over,
  });
  const postSessions = (p: P, body: unknown, headers: Record<string, string> = {}, url = '/v1/sessions/i') =>
    httpRequest(
      edge.base,
      'POST',
      url,
      { 'content-type': 'application/json', authorization: `Bearer ${p.ingestKey}`, 'user-agent': UA, ...headers },
      typeof body === 'string' ? body : JSON.stringify(body),
    );

  it('takes session updates with an ingest key: 202 { ingested }, one client-items message with the User-Agent', async () => {
    const p = await project();
    const res = await postSessions(p, { sessions: [sessionUpdate('a'), sessionUpdate('a', { init: false, status: 'exited', duration: 12 })] });
    expect(res.status).toBe(202);
    expect(JSON.parse(res.body)).toEqual({ ingested: 2 });
    const [m] = itemsOf(p);
    expect(m).toMatchObject({
      userAgent: UA,
      originHost: null,
      sessions: [
        { sid: 'a', init: true },
        { sid: 'a', status: 'exited', duration: 12 },
      ],
    });
  });

  it('refuses a malformed batch with 400 naming the fields, and shares the limit of Sentry session items', async () => {
    const p = await project();
    const bad = await postSessions(p, { sessions: [sessionUpdate('a', { status: 'sideways' })] });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ error: 'invalid_request', fields: [{ path: 'sessions.0.status' }] });
    expect((await postSessions(p, { sessions: [] })).status).toBe(400);
    expect((await postSessions(p, '{')).status).toBe(400);
    expect((await postSessions({ ...p, ingestKey: 'cak_live_nope' }, { sessions: [sessionUpdate('a')] })).status).toBe(401);
    edge.limiter.hits.set(`sessions:ki:${p.keyId}:127.0.0.1`, LIMITS.sessionIngestRate.perKeyAndIpPerMinute);
    expect((await postSessions(p, { sessions: [sessionUpdate('b')] })).status).toBe(429);
    expect((await post(p, sdk.session)).status).toBe(429);
    expect(itemsOf(p)).toHaveLength(0);
  });

  it("on a site's own host, /service/v1/sessions/i, with no key: the project's key is attached", async () => {
    const p = await project();
    await addLiveSite(edge.platform, p.projectId, await mkdtemp(path.join(os.tmpdir(), 'sessions-site-')));
    await edge.settingsRefreshed();
    const res = await postSessions(p, { sessions: [sessionUpdate('site')] }, { authorization: '', host: `${p.slug}.sites.test` }, '/service/v1/sessions/i');
    expect(res.status).toBe(202);
    expect(sessionsOf(p).map((s) => s.sid)).toEqual(['site']);
  });
});
