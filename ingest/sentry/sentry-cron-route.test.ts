import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsnPublicKey } from '../../platform/sentry-dsn.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { createIngestProject, projectNumberOf, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { httpRequest } from '../../test/support/http-request.ts';
import { prng } from '../../test/support/prng.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';

/**
 * Sentry's HTTP cron form on the edge (issue 40): `GET|POST /api/:projectId/cron/:monitorSlug/:sentryKey/` puts the
 * check-in on the bus as the client-items message a `check_in` item makes; the key is the DSN's, the project number
 * the DSN's, origin rules and rate limits as for the other routes; bad input is a JSON 400, and random input never a 5xx.
 */
let edge: TestEdge;
let p: IngestProject;
let number: string;
let key: string;

beforeAll(async () => {
  edge = await startTestEdge();
  p = await createIngestProject(edge.platform, { ingestOrigins: ['jobs.example.com'] });
  number = await projectNumberOf(edge.platform, p.projectId);
  key = dsnPublicKey(p.ingestKey);
  await edge.settingsRefreshed();
});
afterAll(async () => edge?.close());

const request = (method: string, url: string, headers: Record<string, string> = {}, body?: string | Buffer) =>
  httpRequest(edge.base, method, url, headers, body);
const published = () => edge.bus.published.filter((x) => x.topic === clientItems.TOPIC).flatMap((x) => x.messages.map((m) => clientItems.decode(m.value)!));
const cron = (slug: string, query = '', k = key, n = number) => `/api/${n}/cron/${slug}/${k}/${query}`;

describe("Sentry's HTTP cron form", () => {
  it('takes a GET check-in (202, no body) and publishes it as a client-items message, one batch id per request', async () => {
    const before = published().length;
    const started = await request('GET', cron('nightly', '?status=in_progress&check_in_id=run-1&environment=production'));
    expect(started).toMatchObject({ status: 202, body: '' });
    const done = await request('GET', cron('nightly', '?status=ok&check_in_id=run-1&duration=12.5').replace(/\/\?/, '?'));
    expect(done.status).toBe(202);
    const [a, b] = published().slice(before);
    expect(a).toMatchObject({
      v: 1,
      projectId: p.projectId,
      originHost: null,
      checkIns: [{ checkInId: 'run-1', monitorSlug: 'nightly', status: 'in_progress', environment: 'production' }],
    });
    expect(b!.checkIns).toEqual([expect.objectContaining({ checkInId: 'run-1', status: 'ok', duration: 12.5 })]);
    expect(a!.batchId).not.toBe(b!.batchId);
  });

  it('takes a POST with a JSON body and monitor_config (an interval value as text, as Sentry allows); the query wins', async () => {
    const before = published().length;
    const body = JSON.stringify({
      status: 'error',
      monitor_config: { schedule: { type: 'interval', value: '2', unit: 'hour' }, checkin_margin: 5, max_runtime: 30, timezone: 'Europe/Paris' },
    });
    const res = await request('POST', cron('etl', '?status=ok'), { 'content-type': 'application/json' }, body);
    expect(res.status, res.body).toBe(202);
    expect(published().slice(before)[0]!.checkIns![0]).toMatchObject({
      monitorSlug: 'etl',
      status: 'ok',
      checkInId: '',
      monitorConfig: { schedule: { type: 'interval', value: 2, unit: 'hour' }, checkinMargin: 5, maxRuntime: 30, timezone: 'Europe/Paris' },
    });
  });

  it('refuses what is wrong with clear JSON errors: status, fields, config, key, project, origin', async () => {
    const error = async (r: Promise<{ status: number; body: string }>) => {
      const x = await r;
      return { status: x.status, error: JSON.parse(x.body).error as string };
    };
    expect(await error(request('GET', cron('a')))).toEqual({ status: 400, error: 'invalid_request' });
    expect(await error(request('GET', cron('a', '?status=done')))).toEqual({ status: 400, error: 'invalid_request' });
    expect(await error(request('GET', cron('a', '?status=ok&duration=-1')))).toEqual({ status: 400, error: 'invalid_request' });
    expect(await error(request('GET', cron('a', `?status=ok&check_in_id=${'x'.repeat(200)}`)))).toEqual({ status: 400, error: 'invalid_request' });
    const badConfig = JSON.stringify({ status: 'ok', monitor_config: { schedule: { type: 'weekly' } } });
    expect(await error(request('POST', cron('a'), { 'content-type': 'application/json' }, badConfig))).toEqual({ status: 400, error: 'invalid_request' });
    expect(await error(request('POST', cron('a'), { 'content-type': 'application/json' }, '{"status":'))).toEqual({ status: 400, error: 'invalid_request' });
    expect(await error(request('POST', cron('a'), {}, 'x'.repeat(17 * 1024)))).toEqual({ status: 413, error: 'payload_too_large' });
    expect(await error(request('GET', cron('a', '?status=ok', '0'.repeat(64))))).toEqual({ status: 401, error: 'unauthorized' });
    expect(await error(request('GET', cron('a', '?status=ok', 'nope')))).toEqual({ status: 401, error: 'unauthorized' });
    expect(await error(request('GET', cron('a', '?status=ok', key, '999999')))).toEqual({ status: 403, error: 'forbidden' });
    expect(await error(request('GET', cron('a', '?status=ok'), { origin: 'https://evil.example' }))).toEqual({ status: 403, error: 'origin_not_allowed' });
    const allowed = await request('GET', cron('a', '?status=ok'), { origin: 'https://jobs.example.com' });
    expect(allowed.status).toBe(202);
    // The ingest token itself is a key too (as for the envelope route's sentry_key).
    expect((await request('GET', cron('a', '?status=ok', p.ingestKey))).status).toBe(202);
  });

  it('limits check-ins per key and monitor slug, then per key, with Retry-After', async () => {
    const H = LIMITS.uptime.heartbeat;
    for (let i = 0; i < H.httpPerMonitorPerMinute; i++) edge.limiter.hits.set(`cron:km:${p.keyId}:busy`, i + 1);
    const limited = await request('GET', cron('busy', '?status=ok'));
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body).error).toBe('rate_limited');
    expect((await request('GET', cron('quiet', '?status=ok'))).status).toBe(202);
    edge.limiter.hits.set(`cron:k:${p.keyId}`, H.httpPerKeyPerMinute);
    expect((await request('GET', cron('quiet', '?status=ok'))).status).toBe(429);
    edge.limiter.hits.delete(`cron:k:${p.keyId}`);
  });

  it('never answers 5xx to random input, and keeps serving', async () => {
    const rnd = prng(40);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const ascii = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rnd() * 93))).join('');
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    const safe = (s: string) => s.replace(/[/?#]/g, 'x');
    const bodies = [
      '',
      '{}',
      '{"status":"ok"}',
      '{"status":"ok","monitor_config":{"schedule":{"type":"crontab","value":"* * * * *"},"checkin_margin":-4}}',
      '{"status":"in_progress","monitor_config":{"schedule":{"type":"interval","value":"x","unit":"hour"}}}',
      `{"status":"ok","monitor_config":${'['.repeat(200)}${']'.repeat(200)}}`,
      '[1,2]',
      'null',
      text(100),
    ];
    for (let i = 0; i < 250; i++) {
      edge.limiter.hits.clear();
      const slug = pick(['job', safe(ascii(8)), encodeURIComponent(text(4)), '%zz', 'x'.repeat(200)]);
      const k = pick([key, key, p.ingestKey, safe(ascii(20)), '']);
      const n = pick([number, number, '0', safe(ascii(4)), '']);
      const query = pick([
        '',
        '?status=ok',
        '?status=in_progress&check_in_id=a',
        `?status=${ascii(5)}`,
        `?duration=${ascii(3)}&status=ok`,
        '?status=ok&&&=',
        '?%zz',
      ]);
      const method = pick(['GET', 'POST', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD']);
      const headers: Record<string, string> = {};
      if (rnd() < 0.5) headers['content-type'] = pick(['application/json', 'text/plain', ascii(8)]);
      if (rnd() < 0.3) headers.origin = pick(['https://jobs.example.com', 'null', ascii(10)]);
      const body = method === 'POST' || method === 'PUT' ? pick(bodies) : undefined;
      const res = await request(method, `/api/${n}/cron/${slug}/${k}/${query}`, headers, body);
      expect(res.status, `${method} ${n} ${slug} ${query} ${body}`).toBeLessThan(500);
      if (res.body) expect(() => JSON.parse(res.body)).not.toThrow();
    }
    expect((await request('GET', cron('after', '?status=ok'))).status).toBe(202);
  });
});
