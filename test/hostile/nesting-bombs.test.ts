import { httpRequest } from '../support/http-request.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsnPublicKey } from '../../platform/sentry-dsn.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { IngestProject } from '../support/ingest-fixtures.ts';
import { startEdgeWithSite, type TestEdge } from '../support/test-edge.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../support/accounts.ts';

/**
 * Row 1 of issue 22: one 10 KB request nested 5,000 deep used to overflow the stack of a recursive walk and end
 * the process with every role in it. Every public route now refuses such JSON with 400 invalid_request naming the
 * limit, before anything walks it, and the next request is answered. Wide objects and long strings are answered
 * too (within the routes' own size limits). Real HTTP, not inject.
 */
const DEEP = 5_000;
const nestedArray = (n: number) => '['.repeat(n) + ']'.repeat(n);
const nestedObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

const request = httpRequest;

describe('the edge refuses nesting bombs and keeps serving', () => {
  let edge: TestEdge;
  let p: IngestProject;
  let number: string;
  beforeAll(async () => {
    ({ edge, project: p, number } = await startEdgeWithSite());
  });
  afterAll(async () => edge?.close());

  const bombs = (inner: string) => ({
    analytics: JSON.stringify({ batch: [{ event: 'e', distinctId: 'u', properties: { x: 0 } }] }).replace('0', inner),
    errors: JSON.stringify({ batch: [{ name: 'E', message: 'm', extra: { x: 0 } }] }).replace('0', inner),
    sentryStore: JSON.stringify({ exception: { values: [{ type: 'E', value: 'v' }] }, extra: { x: 0 }, tags: { t: 0 } }).replace(/0/g, inner),
    // A placeholder the key cannot hold (a '0' may be in the key itself).
    posthogBatch: JSON.stringify({ api_key: p.ingestKey, batch: [{ event: 'e', distinct_id: 'u', properties: { x: '#bomb#' } }] }).replace('"#bomb#"', inner),
    posthogFlags: JSON.stringify({ token: p.ingestKey, distinct_id: 'u', person_properties: { x: '#bomb#' } }).replace('"#bomb#"', inner),
  });

  for (const [shape, inner] of [
    ['arrays', nestedArray(DEEP)],
    ['objects', nestedObject(DEEP)],
  ] as const) {
    it(`${shape} nested ${DEEP} deep: 400 invalid_request on every route, and the next request is answered`, async () => {
      const b = bombs(inner);
      const key = dsnPublicKey(p.ingestKey);
      const sentryAuth = { 'x-sentry-auth': `Sentry sentry_key=${key}, sentry_version=7`, 'content-type': 'application/json' };
      const cases: Array<[string, string, Record<string, string>, string]> = [
        ['POST', '/v1/analytics/i', { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' }, b.analytics],
        ['POST', '/service/v1/analytics/i', { host: `${p.slug}.localhost`, 'content-type': 'application/json' }, b.analytics],
        ['POST', '/v1/errors/i', { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' }, b.errors],
        ['POST', '/service/v1/errors/i', { host: `${p.slug}.localhost`, 'content-type': 'application/json' }, b.errors],
        ['POST', `/api/${number}/store/`, sentryAuth, b.sentryStore],
        ['POST', `/api/${number}/envelope/`, { ...sentryAuth, 'content-type': 'application/x-sentry-envelope' }, `{}\n{"type":"event"}\n${b.sentryStore}`],
        ['POST', '/v1/sessions/i', { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' }, `{"sessions":[{"sid":${inner}}]}`],
        // The cron form takes 16 KB: a bomb past that is 413 before it is parsed.
        ...(inner.length < 16_000
          ? [
              ['POST', `/api/${number}/cron/nightly/${key}/?status=ok`, { 'content-type': 'application/json' }, `{"monitor_config":${inner}}`] as [
                string,
                string,
                Record<string, string>,
                string,
              ],
            ]
          : []),
        ['POST', '/batch/', { 'content-type': 'application/json' }, b.posthogBatch],
        ['POST', '/e/', { 'content-type': 'application/x-www-form-urlencoded' }, `data=${encodeURIComponent(Buffer.from(b.posthogBatch).toString('base64'))}`],
        ['POST', '/flags/?v=2', { 'content-type': 'application/json' }, b.posthogFlags],
      ];
      for (const [method, url, headers, body] of cases) {
        expect(Buffer.byteLength(body)).toBeLessThan(64 * 1024);
        const res = await request(edge.base, method, url, headers, body);
        expect(res.status, `${url}: ${res.body}`).toBe(400);
        expect(JSON.parse(res.body)).toMatchObject({ error: 'invalid_request' });
        expect(JSON.parse(res.body).message).toContain(String(LIMITS.json.maxDepth));
        expect((await request(edge.base, 'GET', '/v1/errors/i/health', {})).status).toBe(200);
      }
      // The flags route takes properties in its query string.
      const flags = await request(edge.base, 'GET', `/v1/flags/i?distinctId=u&properties=${encodeURIComponent(`{"x":${nestedArray(900)}}`)}`, {
        authorization: `Bearer ${p.ingestKey}`,
      });
      expect(flags.status).toBe(400);
      expect(JSON.parse(flags.body).message).toContain(String(LIMITS.json.maxDepth));
    });
  }

  it('nesting at the limit is accepted; wide objects and long strings are answered below 500', async () => {
    const atLimit = JSON.stringify({ batch: [{ name: 'E', message: 'm', extra: { x: 0 } }] }).replace('0', nestedArray(LIMITS.json.maxDepth - 4));
    const ok = await request(edge.base, 'POST', '/v1/errors/i', { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' }, atLimit);
    expect(ok.status, ok.body).toBe(202);
    const wide = JSON.stringify({
      batch: [{ event: 'e', distinctId: 'u', properties: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])) }],
    });
    const long = JSON.stringify({ batch: [{ name: 'E'.repeat(60_000), message: 'm' }] });
    for (const [url, body] of [
      ['/v1/analytics/i', wide],
      ['/v1/errors/i', long],
    ] as const) {
      const res = await request(edge.base, 'POST', url, { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'application/json' }, body);
      expect(res.status, res.body).toBeLessThan(500);
      expect(typeof JSON.parse(res.body)).toBe('object');
    }
    expect((await request(edge.base, 'GET', '/v1/errors/i/health', {})).status).toBe(200);
  });
});

describe('the API refuses nesting bombs on every JSON route and keeps serving', () => {
  it('400 invalid_request naming the limit, then answers the next request', async () => {
    const api = await buildTestApi();
    try {
      await api.app.listen({ port: 0, host: '127.0.0.1' });
      const address = api.app.server.address() as { port: number };
      const base = `http://127.0.0.1:${address.port}`;
      const owner = await signUpAndSignIn(api.app, api.platform);
      const project = await createProject(api.app, owner.cookie, { name: 'Bombed' });
      const json = { ...sessionHeaders(owner.cookie), 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
      // Every route of the OpenAPI document that takes a body, with the owner's session and the project's slug.
      const doc = JSON.parse((await request(base, 'GET', '/v1/openapi.json', {})).body) as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
      const routes: Array<[string, string]> = [];
      for (const [p, methods] of Object.entries(doc.paths)) {
        for (const [m, op] of Object.entries(methods))
          if (['post', 'put', 'patch'].includes(m) && op.requestBody)
            routes.push([m.toUpperCase(), p.replace('{slug}', project.slug).replace(/\{[^}]+\}/g, 'x_1')]);
      }
      expect(routes.length).toBeGreaterThan(20);
      for (const [method, url] of [...routes, ['POST', '/v1/hooks/cxhook_x'] as [string, string]]) {
        for (const body of [
          `{"a":${nestedArray(DEEP)}}`,
          `{"name":${nestedObject(DEEP)}}`,
          JSON.stringify(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, i]))),
          JSON.stringify({ name: 'x'.repeat(200_000) }),
        ]) {
          const res = await request(base, method, url, json, body);
          expect(res.status, `${method} ${url}: ${res.body.slice(0, 200)}`).toBeLessThan(500);
          if (res.status >= 400) expect(typeof JSON.parse(res.body).error, `${method} ${url}`).toBe('string');
        }
        expect((await request(base, 'GET', '/v1/projects', sessionHeaders(owner.cookie))).status).toBe(200);
      }
      const res = await request(base, 'POST', '/v1/projects', json, `{"name":${nestedObject(DEEP)}}`);
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).message).toContain(String(LIMITS.json.maxDepth));
    } finally {
      await api.close();
    }
  });
});
