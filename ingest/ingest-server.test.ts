import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify from 'fastify';
import { ManualClock } from '../platform/clock.ts';
import type { Platform } from '../platform/platform.ts';
import { BusUnavailableError } from '../platform/ports/bus.ts';
import { TOPICS } from '../schemas/topics.ts';
import { LIMITS } from '../schemas/limits.ts';
import { newToken } from '../platform/tokens.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import {
  createCountingLimiter,
  createIngestProject,
  createRecordingBus,
  revokeKey,
  setIngestOrigins,
  setPaused,
  setUsage,
  type IngestProject,
  type RecordingBus,
} from '../test/support/ingest-fixtures.ts';
import { startIngestServer, type IngestServer } from './ingest-server.ts';
import { injectForwarder } from './forward.ts';
import { secondsToMonthEnd } from '../domain/usage-month.ts';
import { createEnvironmentStep } from '../processor/errors/steps/environment-step.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';

const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 0));
const MONTH = '2026-11';

let platform: Platform;
let bus: RecordingBus;
let server: IngestServer;
let base: string;

beforeAll(async () => {
  bus = createRecordingBus();
  platform = await createTestPlatform({
    env: { SETTINGS_REFRESH_MS: '100', WIDGET_HOSTS: 'widgets.example.net' },
    overrides: { bus, limiter: createCountingLimiter(), analytics: inertAnalytics, mailer: inertMailer, clock },
  });
  server = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${server.port}`;
});

afterAll(async () => {
  await server?.close();
  await platform?.close();
});

function event(over: Record<string, unknown> = {}) {
  return { name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x is undefined\n    at f (src/a.ts:1:2)', ...over };
}

async function post(key: string | null, body: unknown, headers: Record<string, string> = {}, url = base) {
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  const res = await fetch(`${url}/v1/errors/i`, {
    method: 'POST',
    headers: h,
    body: typeof body === 'string' ? body : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

async function settingsLoads(url = base): Promise<number> {
  const res = await fetch(`${url}/v1/errors/i/health`);
  return (await res.json()).settingsLoads;
}

/** Wait until the edge has reloaded its settings twice (so anything written before is in its cache). */
async function settingsRefreshed(url = base): Promise<void> {
  const start = await settingsLoads(url);
  while ((await settingsLoads(url)) < start + 2) await new Promise((r) => setTimeout(r, 50));
}

async function freshProject(opts: Parameters<typeof createIngestProject>[1] = {}): Promise<IngestProject> {
  const p = await createIngestProject(platform, opts);
  await settingsRefreshed();
  return p;
}

function publishedFor(projectId: string) {
  return bus.batches().filter((b) => b.projectId === projectId);
}

describe('POST /v1/errors/i: accepting', () => {
  it('stamps each event and publishes one batch keyed by project, answering 202 { ingested }', async () => {
    const p = await freshProject();
    const res = await post(p.ingestKey, { batch: [event(), event({ name: undefined, message: 'second' })] });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ ingested: 2 });
    const published = bus.published.filter((m) => m.messages.some((x) => x.key === p.projectId));
    expect(published).toHaveLength(1);
    expect(published[0].topic).toBe(TOPICS.errorEvents);
    expect(published[0].messages).toHaveLength(1);
    const [batch] = publishedFor(p.projectId);
    expect(batch).toMatchObject({ projectId: p.projectId, originHost: null, receivedAt: clock.now() });
    expect(batch.events).toHaveLength(2);
    expect(batch.events[0].eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(batch.events[0].eventId).not.toBe(batch.events[1].eventId);
    expect(batch.events[1].name).toBe('Error');
    expect(batch.events[0].runtime).toBe('node');
  });

  it('takes the key from x-service-analytics-key and allows charset in the content type', async () => {
    const p = await freshProject();
    const res = await post(null, { batch: [event()] }, { 'x-service-analytics-key': p.ingestKey, 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(202);
  });

  it('defaults runtime to browser when an Origin is present, records the origin host and echoes CORS', async () => {
    const p = await freshProject();
    const res = await post(p.ingestKey, { batch: [event(), event({ runtime: 'node' })] }, { origin: 'https://app.example.com' });
    expect(res.status).toBe(202);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    const [batch] = publishedFor(p.projectId);
    expect(batch.originHost).toBe('app.example.com');
    expect(batch.events.map((e) => e.runtime)).toEqual(['browser', 'node']);
  });

  it('cuts over-long name, message and stack and marks them truncated instead of refusing', async () => {
    const p = await freshProject();
    const F = LIMITS.errorFields;
    const res = await post(p.ingestKey, {
      batch: [event({ name: 'N'.repeat(F.name + 50), message: 'm'.repeat(F.message + 1), stack: 's'.repeat(F.stack + 10) }), event()],
    });
    expect(res.status).toBe(202);
    const [batch] = publishedFor(p.projectId);
    expect(batch.events[0].name).toHaveLength(F.name);
    expect(batch.events[0].message).toHaveLength(F.message);
    expect(batch.events[0].stack).toHaveLength(F.stack);
    expect(batch.events[0].truncated).toEqual(['name', 'message', 'stack']);
    expect(batch.events[1].truncated).toEqual([]);
  });

  it('carries debugIds to the bus as sent, stamped with the file -> uuid entries only, at most 100 (issue 37)', async () => {
    const p = await freshProject();
    const id = (i: number) => `c2ba6f5c-7f59-4b5e-9d3a-${String(i).padStart(12, '0')}`;
    const debugIds: Record<string, unknown> = {
      'https://shop.example.com/assets/index-3f9a2c1b.js': 'C2BA6F5C7F594B5E9D3A000000000001',
      'https://shop.example.com/assets/vendor.js': 'not a uuid',
      'https://shop.example.com/assets/chunk.js': 42,
      '': id(3),
      ['x'.repeat(2049)]: id(4),
    };
    const many: Record<string, string> = {};
    for (let i = 0; i < 150; i++) many[`/app/dist/f${i}.js`] = id(i);
    const res = await post(p.ingestKey, { batch: [event({ debugIds }), event({ debugIds: many }), event()] });
    expect(res.status).toBe(202);
    const [batch] = publishedFor(p.projectId);
    // The edge publishes the client's bytes; the stamp the processor reads keeps what debugIdsOf keeps.
    expect(batch.events[0].debugIds).toEqual({ 'https://shop.example.com/assets/index-3f9a2c1b.js': 'c2ba6f5c-7f59-4b5e-9d3a-000000000001' });
    expect(Object.keys(batch.events[1].debugIds!)).toHaveLength(LIMITS.errorFields.debugIds);
    expect(batch.events[1].debugIds!['/app/dist/f0.js']).toBe(id(0));
    expect(batch.events[1].debugIds).not.toHaveProperty('/app/dist/f100.js');
    expect(batch.events[2]).not.toHaveProperty('debugIds');
    // Not an object at all: refused like any field of the wrong type, naming it.
    const bad = await post(p.ingestKey, { batch: [event({ debugIds: ['x'] })] });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ error: 'invalid_request', fields: [{ path: 'batch.0.debugIds' }] });
  });

  it('accepts environment in the body and ignores it', async () => {
    const p = await freshProject();
    const res = await post(p.ingestKey, { batch: [event({ environment: 'production' })] });
    expect(res.status).toBe(202);
    const [batch] = publishedFor(p.projectId);
    expect(batch.events[0]).not.toHaveProperty('environment');
    expect(batch.events[0]!.context).toEqual({ clientEnvironment: 'production' });
  });

  it("stamps the batch with the request's User-Agent, cut to its limit, and keeps the event's context (issue 40)", async () => {
    const p = await freshProject();
    const ua = `Mozilla/5.0 (X11; Linux x86_64) ${'x'.repeat(1000)}`;
    const res = await post(
      p.ingestKey,
      { batch: [event({ level: 'warning', tags: { plan: 'pro' } })] },
      { origin: 'https://app.example.com', 'user-agent': ua },
    );
    expect(res.status).toBe(202);
    const [batch] = publishedFor(p.projectId);
    expect(batch.userAgent).toBe(ua.slice(0, 512));
    expect(batch.events[0]!.context).toEqual({ level: 'warning', tags: { plan: 'pro' } });
  });
});

describe('POST /v1/errors/i: credentials and shape', () => {
  it('401 without a key, with an unknown key, and with a non-Bearer scheme', async () => {
    expect((await post(null, { batch: [event()] })).json.error).toBe('unauthorized');
    const unknown = await post(newToken('cak_live_'), { batch: [event()] });
    expect(unknown.status).toBe(401);
    expect(unknown.json).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    const basic = await post(null, { batch: [event()] }, { authorization: 'Basic abc' });
    expect(basic.status).toBe(401);
  });

  it('403 forbidden for a credential that is not an ingest key', async () => {
    const res = await post(newToken('cx_live_'), { batch: [event()] });
    expect(res.status).toBe(403);
    expect(res.json.error).toBe('forbidden');
  });

  it('415 unless the body is declared application/json', async () => {
    const p = await freshProject();
    const res = await post(p.ingestKey, JSON.stringify({ batch: [event()] }), { 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
    expect(res.json.error).toBe('unsupported_media_type');
    expect(publishedFor(p.projectId)).toHaveLength(0);
  });

  it('400 invalid_request naming the field, for bad events, bad batch sizes and bad JSON', async () => {
    const p = await freshProject();
    const bad = await post(p.ingestKey, { batch: [event(), event(), event(), { name: 'E' }] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('invalid_request');
    expect(bad.json.fields).toEqual([{ path: 'batch.3.message', message: expect.any(String) }]);
    const empty = await post(p.ingestKey, { batch: [] });
    expect(empty.status).toBe(400);
    expect(empty.json.fields[0].path).toBe('batch');
    const tooMany = await post(p.ingestKey, { batch: Array.from({ length: LIMITS.errorBatch.maxEvents + 1 }, () => event()) });
    expect(tooMany.status).toBe(400);
    const notJson = await post(p.ingestKey, '{"batch": [');
    expect(notJson.status).toBe(400);
    expect(notJson.json.error).toBe('invalid_request');
    expect(publishedFor(p.projectId)).toHaveLength(0);
  });

  it('400 invalid_request for a body that is not UTF-8 (the rule of the API too): nothing is stored with its bytes replaced', async () => {
    const p = await freshProject();
    const body = Buffer.concat([Buffer.from('{"batch":[{"message":"bad '), Buffer.from([0xff, 0xfe]), Buffer.from(' bytes"}]}')]);
    const res = await post(p.ingestKey, body);
    expect([res.status, res.json.error, res.json.message]).toEqual([400, 'invalid_request', 'body is not valid UTF-8']);
    expect(publishedFor(p.projectId)).toHaveLength(0);
    const ok = await post(p.ingestKey, Buffer.from(JSON.stringify({ batch: [event({ message: 'ünïcödé 😀' })] })));
    expect(ok.status).toBe(202);
  });
});

/** Raw HTTP, so a test controls how the body is sent and sees the connection close. */
function rawPost(port: number, headers: Record<string, string | number>, write: (req: http.ClientRequest) => Promise<void>) {
  return new Promise<{ status: number; body: string; closed: Promise<void>; written: () => number }>((resolve, reject) => {
    let written = 0;
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/errors/i', headers, agent: false });
    const closed = new Promise<void>((r) => req.on('close', () => r()));
    req.on('socket', (s) => s.on('close', () => undefined));
    const origWrite = req.write.bind(req);
    (req as unknown as { write: (c: Buffer) => boolean }).write = (c: Buffer) => {
      written += c.length;
      return origWrite(c);
    };
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, closed, written: () => written }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body, closed, written: () => written }));
    });
    req.on('error', (err) => {
      // A write after the server closed is expected (EPIPE/ECONNRESET); the response decides.
      if (!(err as NodeJS.ErrnoException).code) reject(err);
    });
    write(req).catch(() => undefined);
  });
}

describe('POST /v1/errors/i: body size', () => {
  it('413 from a declared Content-Length over 64 KB, before reading the body, and closes', async () => {
    const p = await freshProject();
    const res = await rawPost(
      server.port,
      { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json', 'content-length': LIMITS.errorBatch.maxBodyBytes + 1 },
      async (req) => req.flushHeaders(), // headers only: the answer must not wait for the body
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toBe('payload_too_large');
    await res.closed;
  });

  it('accepts a body that arrives in pieces, with a declared length or chunked, and publishes it byte for byte', async () => {
    const p = await freshProject();
    const body = Buffer.from(JSON.stringify({ batch: Array.from({ length: 10 }, (_, i) => event({ message: `piece ${i} ${'x'.repeat(1500)}` })) }));
    for (const framing of ['content-length', 'chunked'] as const) {
      const headers: Record<string, string | number> = { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' };
      if (framing === 'content-length') headers['content-length'] = body.length;
      else headers['transfer-encoding'] = 'chunked';
      const before = publishedFor(p.projectId).length;
      const res = await rawPost(server.port, headers, async (req) => {
        for (let at = 0; at < body.length; at += 4096) {
          req.write(body.subarray(at, at + 4096));
          await new Promise((r) => setTimeout(r, 2));
        }
        req.end();
      });
      expect([framing, res.status]).toEqual([framing, 202]);
      const published = publishedFor(p.projectId);
      expect(published).toHaveLength(before + 1);
      expect(published[published.length - 1]!.events.map((e) => e.message)).toEqual(Array.from({ length: 10 }, (_, i) => `piece ${i} ${'x'.repeat(1500)}`));
      // The client's bytes travel verbatim inside the envelope.
      const values = bus.published.flatMap((x) => x.messages.map((m) => m.value));
      expect(values[values.length - 1]!.includes(body)).toBe(true);
    }
  });

  it('413 as soon as a chunked body passes 64 KB, without reading it to the end', async () => {
    const p = await freshProject();
    const chunk = Buffer.alloc(8 * 1024, 'a');
    const huge = 4 * 1024 * 1024;
    let stop = false;
    const res = await rawPost(
      server.port,
      { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      async (req) => {
        req.on('response', () => (stop = true));
        req.on('close', () => (stop = true));
        let sent = 0;
        req.write(Buffer.from('{"batch":["'));
        while (!stop && sent < huge) {
          if (!req.write(chunk)) await new Promise((r) => setTimeout(r, 5));
          sent += chunk.length;
          await new Promise((r) => setImmediate(r));
        }
        if (!stop) req.end();
      },
    );
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toBe('payload_too_large');
    await res.closed;
    expect(res.written()).toBeLessThan(huge);
    expect(publishedFor(p.projectId)).toHaveLength(0);
  });
});

describe('POST /v1/errors/i: origins (§7.3)', () => {
  it('403 origin_not_allowed for a host off every list; allowed: own domains, widget hosts, ingestOrigins', async () => {
    const p = await freshProject({ ingestOrigins: ['shop.example.org', '*.cdn.example.org'] });
    const refused = await post(p.ingestKey, { batch: [event()] }, { origin: 'https://evil.example.net' });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toBe('origin_not_allowed');
    // The page can read why (issue 23): the refusal carries the CORS headers, and its code.
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://evil.example.net');
    for (const origin of [
      'https://app.example.com',
      'https://pr-7.preview.example.com',
      'https://widgets.example.net',
      'https://shop.example.org:8443',
      'https://a.cdn.example.org',
    ]) {
      expect((await post(p.ingestKey, { batch: [event()] }, { origin })).status, origin).toBe(202);
    }
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(202); // no Origin: server to server
    expect(publishedFor(p.projectId)).toHaveLength(6);
  });

  it('a domain or ingestOrigins entry with a port allows that port only, and only that port is stamped production', async () => {
    const p = await freshProject({ productionDomains: ['localhost:4173'], previewDomains: [], ingestOrigins: ['localhost:5173'] });
    for (const origin of ['http://localhost:4173', 'http://localhost:5173']) {
      expect((await post(p.ingestKey, { batch: [event({ message: origin })] }, { origin })).status, origin).toBe(202);
    }
    for (const origin of ['http://localhost:4174', 'http://localhost', 'https://localhost']) {
      const refused = await post(p.ingestKey, { batch: [event()] }, { origin });
      expect([refused.status, refused.json.error], origin).toEqual([403, 'origin_not_allowed']);
    }
    // With every origin allowed, another port is accepted but proves no environment.
    const open = await freshProject({ productionDomains: ['localhost:4173'], previewDomains: [], ingestOrigins: [] });
    expect((await post(open.ingestKey, { batch: [event({ message: 'http://localhost:4174' })] }, { origin: 'http://localhost:4174' })).status).toBe(202);

    // What the processor stamps from the edge's envelope.
    const environmentStep = createEnvironmentStep({ db: platform.db });
    const stamped = async (projectId: string) => {
      const incoming = publishedFor(projectId).flatMap((b) =>
        b.events.map((e) => ({ projectId, originHost: b.originHost, receivedAt: b.receivedAt, event: e, fingerprint: 'f', groupId: 'g' })),
      );
      const outcomes = await environmentStep(incoming);
      return Object.fromEntries(outcomes.map((o, i) => [incoming[i].event.message, o.kind === 'ok' ? o.value.environment : o.reason]));
    };
    expect(await stamped(p.projectId)).toEqual({ 'http://localhost:4173': 'production', 'http://localhost:5173': 'unknown' });
    expect(await stamped(open.projectId)).toEqual({ 'http://localhost:4174': 'unknown' });
  });

  it('an empty ingestOrigins allows every origin', async () => {
    const p = await freshProject({ ingestOrigins: [] });
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://anything.example.net' })).status).toBe(202);
  });

  it('answers the CORS preflight for the ingest route', async () => {
    const res = await fetch(`${base}/v1/errors/i`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(res.headers.get('access-control-allow-methods')).toBe('POST');
    expect(res.headers.get('access-control-allow-headers')).toContain('x-service-analytics-key');
  });
});

describe('POST /v1/errors/i: pause, caps, rate limits, bus', () => {
  it('paused project: 204 and nothing published', async () => {
    const p = await freshProject({ paused: true });
    const res = await post(p.ingestKey, { batch: [event()] });
    expect(res.status).toBe(204);
    expect(publishedFor(p.projectId)).toHaveLength(0);
  });

  it('over a monthly cap: 429 errors_capped with Retry-After to the end of the UTC month, by the environment the Origin implies', async () => {
    const p = await createIngestProject(platform);
    await setUsage(platform, p.projectId, MONTH, 'production', LIMITS.errorCaps.productionPerMonth);
    await settingsRefreshed();
    const capped = await post(p.ingestKey, { batch: [event()] }, { origin: 'https://app.example.com' });
    expect(capped.status).toBe(429);
    expect(capped.json.error).toBe('errors_capped');
    expect(Number(capped.headers.get('retry-after'))).toBe(secondsToMonthEnd(clock.now()));
    expect(Number(capped.headers.get('retry-after'))).toBe((Date.UTC(2026, 11, 1) - clock.now()) / 1000);
    // Preview is not capped, and without an Origin the edge cannot tell the environment.
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://x.preview.example.com' })).status).toBe(202);
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(202);
    await setUsage(platform, p.projectId, MONTH, 'preview', LIMITS.errorCaps.previewPerMonth);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(202); // could still be `unknown`
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://elsewhere.example.net' })).status).toBe(202);
    await setUsage(platform, p.projectId, MONTH, 'unknown', LIMITS.errorCaps.previewPerMonth);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://elsewhere.example.net' })).status).toBe(429);
    const both = await post(p.ingestKey, { batch: [event()] });
    expect(both.status).toBe(429);
    expect(both.json.error).toBe('errors_capped');
  });

  it('usage of another month does not cap', async () => {
    const p = await createIngestProject(platform);
    await setUsage(platform, p.projectId, '2026-10', 'production', LIMITS.errorCaps.productionPerMonth);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://app.example.com' })).status).toBe(202);
  });

  it('30 requests per minute per key and IP, then 429 rate_limited with Retry-After; X-Forwarded-For is ignored without TRUST_PROXY', async () => {
    const p = await freshProject();
    for (let i = 0; i < LIMITS.errorIngestRate.perKeyAndIpPerMinute; i++) {
      expect((await post(p.ingestKey, { batch: [event()] }, { 'x-forwarded-for': `10.0.0.${i}` })).status).toBe(202);
    }
    const res = await post(p.ingestKey, { batch: [event()] }, { 'x-forwarded-for': '10.0.1.1' });
    expect(res.status).toBe(429);
    expect(res.json.error).toBe('rate_limited');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(publishedFor(p.projectId)).toHaveLength(LIMITS.errorIngestRate.perKeyAndIpPerMinute);
  });

  it('200 requests per minute per key across IPs (client IP from X-Forwarded-For behind a trusted proxy)', async () => {
    const proxied: Platform = { ...platform, config: { ...platform.config, TRUST_PROXY: true }, limiter: createCountingLimiter() };
    const edge = await startIngestServer(proxied, { port: 0, host: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${edge.port}`;
      const p = await createIngestProject(platform);
      await settingsRefreshed(url);
      const perIp = LIMITS.errorIngestRate.perKeyAndIpPerMinute;
      const total = LIMITS.errorIngestRate.perKeyPerMinute;
      for (let i = 0; i < total; i++) {
        const ip = `192.0.2.${Math.floor(i / perIp)}`;
        expect((await post(p.ingestKey, { batch: [event()] }, { 'x-forwarded-for': `203.0.113.9, ${ip}` }, url)).status).toBe(202);
      }
      const res = await post(p.ingestKey, { batch: [event()] }, { 'x-forwarded-for': '198.51.100.1' }, url);
      expect(res.status).toBe(429);
      expect(res.json.error).toBe('rate_limited');
      expect(res.headers.get('retry-after')).toBeTruthy();
    } finally {
      await edge.close();
    }
  });

  it('503 with Retry-After when the bus cannot take the batch, and nothing is half-accepted', async () => {
    const p = await freshProject();
    bus.failWith = new BusUnavailableError('kafka away');
    try {
      const res = await post(p.ingestKey, { batch: [event(), event()] });
      expect(res.status).toBe(503);
      expect(res.json.error).toBe('unavailable');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      bus.failWith = new Error('anything else');
      expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(503);
    } finally {
      bus.failWith = null;
    }
    expect(publishedFor(p.projectId)).toHaveLength(0);
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(202);
  });
});

describe('settings reach the edge through the background refresh', () => {
  it('a revoked key, a pause and changed origins take effect within a few refresh cycles', async () => {
    const p = await freshProject();
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://other.example.net' })).status).toBe(202);

    await setIngestOrigins(platform, p.projectId, ['only.example.org']);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] }, { origin: 'https://other.example.net' })).status).toBe(403);

    await setPaused(platform, p.projectId, true);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(204);

    await revokeKey(platform, p.keyId);
    await settingsRefreshed();
    expect((await post(p.ingestKey, { batch: [event()] })).status).toBe(401);
  });
});

describe('health and stats', () => {
  it('counts every rejection by reason and serves the counters without tenant data', async () => {
    const before = server.stats();
    await post(null, { batch: [event()] });
    const after = server.stats();
    expect(after.unauthorized).toBe(before.unauthorized + 1);
    const res = await fetch(`${base}/v1/errors/i/health`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.counters).toMatchObject({ unauthorized: after.unauthorized, accepted_events: expect.any(Number), too_large: expect.any(Number) });
    expect(JSON.stringify(body)).not.toMatch(/prj_|cak_live_/);
  });
});

describe('every other route', () => {
  it('404 not_found JSON without a forwarder; 405 for other methods on the ingest route', async () => {
    const res = await fetch(`${base}/v1/projects`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 'not_found' });
    const get = await fetch(`${base}/v1/errors/i`);
    expect(get.status).toBe(405);
    expect(await get.json()).toMatchObject({ error: 'method_not_allowed' });
  });

  it('relays to Fastify through injectForwarder: method, path, query, headers, body, client address', async () => {
    const app = Fastify();
    app.post('/v1/echo', async (req, reply) => {
      reply.header('set-cookie', ['a=1', 'b=2']);
      return reply.code(201).send({ q: req.query, h: req.headers['x-test'], body: req.body, ip: req.ip });
    });
    await app.ready();
    const edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1', forward: injectForwarder(app) });
    try {
      const res = await fetch(`http://127.0.0.1:${edge.port}/v1/echo?x=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-test': 'yes' },
        body: JSON.stringify({ hello: 'world' }),
      });
      expect(res.status).toBe(201);
      expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
      expect(await res.json()).toEqual({ q: { x: '1' }, h: 'yes', body: { hello: 'world' }, ip: '127.0.0.1' });
      const big = await fetch(`http://127.0.0.1:${edge.port}/v1/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: 'x'.repeat(1024 * 1024 + 1),
      });
      expect(big.status).toBe(413);
      expect((await big.json()).error).toBe('payload_too_large');
    } finally {
      await edge.close();
      await app.close();
    }
  });
});
