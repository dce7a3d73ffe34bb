import { createServer, type Server } from 'node:http';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIngestProject, setIngestOrigins, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { newId } from '../../platform/tokens.ts';
import { TOPICS } from '../../schemas/topics.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import {
  createErrorForwarder,
  createForwarder,
  SAME_ORIGIN_ANALYTICS_PATH,
  SAME_ORIGIN_ERRORS_PATH,
  SAME_ORIGIN_FLAGS_PATH,
  SAME_ORIGIN_SESSIONS_PATH,
} from './forwarder.ts';

/**
 * The Node SDK's same-origin relay for apps hosted elsewhere, against a real edge: as node:http middleware, as a
 * fetch-style handler and as a Fastify plugin. The key never leaves the server; the browser's Origin and IP travel
 * with the batch, so the origin rule and the per-IP limit still hold; status, body and Retry-After come back.
 */
let edge: TestEdge;
let p: IngestProject;
let app: Server;
let appUrl: string;

beforeAll(async () => {
  edge = await startTestEdge();
  p = await createIngestProject(edge.platform);
  await setIngestOrigins(edge.platform, p.projectId, ['app.example.org']);
  const flag = { key: 'beta', description: '', enabled: true, rolloutPercentage: 100, variants: [], conditions: [] };
  await edge.platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, 'beta', $3::jsonb)`, [
    newId('flg_'),
    p.projectId,
    JSON.stringify(flag),
  ]);
  await edge.settingsRefreshed();
  const forward = createErrorForwarder({ ingestKey: p.ingestKey, baseUrl: edge.base, trustProxy: true });
  app = createServer((req, res) => forward.middleware(req, res, () => res.writeHead(200).end('the app')));
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
  appUrl = `http://127.0.0.1:${(app.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => app?.close(() => r()));
  await edge?.close();
});

const batch = (message: string) => JSON.stringify({ batch: [{ name: 'Error', message }] });
const publishedMessages = () =>
  edge.bus
    .batches()
    .filter((b) => b.projectId === p.projectId)
    .flatMap((b) => b.events.map((e) => e.message));

describe('the Node SDK forwarder', () => {
  it("relays a page's batch with the key attached and the browser's Origin and IP; other paths go on to the app", async () => {
    const res = await fetch(`${appUrl}${SAME_ORIGIN_ERRORS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example.org', 'x-forwarded-for': '203.0.113.9' },
      body: batch('via middleware'),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ ingested: 1 });
    expect(publishedMessages()).toContain('via middleware');
    const published = edge.bus.batches().find((b) => b.events[0]?.message === 'via middleware')!;
    expect(published.originHost).toBe('app.example.org');
    expect([...edge.limiter.hits.keys()]).toContain(`errors:ki:${p.keyId}:203.0.113.9`);
    expect(await (await fetch(`${appUrl}/anything`)).text()).toBe('the app');
  });

  it('relays refusals as the edge answered them: origin (403), validation (400), rate limits with Retry-After (429)', async () => {
    const refused = await fetch(`${appUrl}${SAME_ORIGIN_ERRORS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example.net' },
      body: batch('x'),
    });
    expect(refused.status).toBe(403);
    expect((await refused.json()).error).toBe('origin_not_allowed');
    const invalid = await fetch(`${appUrl}${SAME_ORIGIN_ERRORS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"batch":[]}',
    });
    expect(invalid.status).toBe(400);
    expect((await invalid.json()).error).toBe('invalid_request');
    let limited: Response | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const r = await fetch(`${appUrl}${SAME_ORIGIN_ERRORS_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.7' },
        body: batch(`burst ${i}`),
      });
      if (r.status === 429) limited = r;
    }
    expect((await limited!.json()).error).toBe('rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another browser behind the same app is not limited by the first one's burst.
    const other = await fetch(`${appUrl}${SAME_ORIGIN_ERRORS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.8' },
      body: batch('another browser'),
    });
    expect(other.status).toBe(202);
  });

  it('works as a fetch-style handler and as a Fastify plugin; an unreachable service is 503 with Retry-After', async () => {
    const forward = createErrorForwarder({ ingestKey: p.ingestKey, baseUrl: edge.base });
    const res = await forward.handle(
      new Request(`https://app.example.org${SAME_ORIGIN_ERRORS_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: 'https://app.example.org' },
        body: batch('via fetch handler'),
      }),
      '192.0.2.1',
    );
    expect(res.status).toBe(202);

    const fastify = Fastify();
    await fastify.register(forward.fastify);
    const viaFastify = await fastify.inject({
      method: 'POST',
      url: SAME_ORIGIN_ERRORS_PATH,
      headers: { 'content-type': 'application/json', origin: 'https://app.example.org' },
      payload: batch('via fastify'),
    });
    expect(viaFastify.statusCode).toBe(202);
    await fastify.close();
    expect(publishedMessages()).toEqual(expect.arrayContaining(['via fetch handler', 'via fastify']));

    const away = createErrorForwarder({ ingestKey: p.ingestKey, baseUrl: 'http://127.0.0.1:9' });
    const down = await away.handle(new Request(`https://app.example.org${SAME_ORIGIN_ERRORS_PATH}`, { method: 'POST', body: batch('lost') }));
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    const tooBig = await forward.handle(new Request(`https://app.example.org${SAME_ORIGIN_ERRORS_PATH}`, { method: 'POST', body: 'x'.repeat(70 * 1024) }));
    expect(tooBig.status).toBe(413);
  });

  it("relays cx.js's analytics and flags paths too (issue 23): nothing falls through to the app", async () => {
    const events = JSON.stringify({ batch: [{ event: 'signup', distinctId: 'visitor-1', properties: { plan: 'pro' } }] });
    const captured = await fetch(`${appUrl}${SAME_ORIGIN_ANALYTICS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example.org' },
      body: events,
    });
    expect(captured.status).toBe(202);
    expect(captured.headers.get('content-type')).toContain('application/json');
    const stored = edge.bus.published
      .filter((m) => m.topic === TOPICS.analyticsEvents)
      .flatMap((m) => m.messages.map((x) => JSON.parse(x.value.toString()) as { projectId: string; events: Array<{ event: string }> }));
    expect(stored.some((b) => b.projectId === p.projectId && b.events.some((e) => e.event === 'signup'))).toBe(true);

    const flags = await fetch(`${appUrl}${SAME_ORIGIN_FLAGS_PATH}?distinctId=visitor-1`);
    expect(flags.status).toBe(200);
    expect((await flags.json()).flags.beta).toMatchObject({ enabled: true });
    const etag = flags.headers.get('etag');
    expect(etag).toBeTruthy();
    expect((await fetch(`${appUrl}${SAME_ORIGIN_FLAGS_PATH}?distinctId=visitor-1`, { headers: { 'if-none-match': etag! } })).status).toBe(304);
    // Wrong methods are refused, not passed on to the app.
    expect((await fetch(`${appUrl}${SAME_ORIGIN_FLAGS_PATH}`, { method: 'POST', body: '{}' })).status).toBe(405);
    expect((await fetch(`${appUrl}${SAME_ORIGIN_ANALYTICS_PATH}`)).status).toBe(405);

    // The fetch-style handler and the Fastify plugin answer all three paths too.
    const forward = createForwarder({ ingestKey: p.ingestKey, baseUrl: edge.base });
    expect((await forward.handle(new Request(`https://app.example.org${SAME_ORIGIN_FLAGS_PATH}?distinctId=v2`))).status).toBe(200);
    const fastify = Fastify();
    await fastify.register(forward.fastify);
    expect((await fastify.inject({ method: 'GET', url: `${SAME_ORIGIN_FLAGS_PATH}?distinctId=v3` })).json().flags.beta.enabled).toBe(true);
    expect(
      (
        await fastify.inject({
          method: 'POST',
          url: SAME_ORIGIN_ANALYTICS_PATH,
          headers: { 'content-type': 'application/json', origin: 'https://app.example.org' },
          payload: events,
        })
      ).statusCode,
    ).toBe(202);
    await fastify.close();
  });

  it("relays cx.js's session updates (issue 40) to the edge's sessions route", async () => {
    const now = Date.now();
    const update = { sid: 'sess-forwarded', init: true, status: 'ok', errors: 0, started: now, timestamp: now };
    const res = await fetch(`${appUrl}${SAME_ORIGIN_SESSIONS_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example.org' },
      body: JSON.stringify({ sessions: [update] }),
    });
    expect(res.status).toBeLessThan(300);
    const items = edge.bus.published
      .filter((m) => m.topic === TOPICS.clientItems)
      .flatMap((m) => m.messages.map((x) => clientItems.decode(x.value)))
      .filter((m) => m?.projectId === p.projectId);
    expect(items.flatMap((m) => m?.sessions ?? [])).toEqual([expect.objectContaining({ sid: 'sess-forwarded', init: true, status: 'ok' })]);
    expect((await fetch(`${appUrl}${SAME_ORIGIN_SESSIONS_PATH}`)).status).toBe(405);
  });
});
