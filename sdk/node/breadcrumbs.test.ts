import { get, request, createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../schemas/limits.ts';
import { breadcrumbsOf } from '../../schemas/error-context.ts';
import { init, type NodeClient, type WireBreadcrumb } from './index.ts';
import { BREADCRUMB_TEXT, BREADCRUMBS_MAX } from './wire.ts';

/**
 * @cx/node's breadcrumbs (sdk/node/breadcrumbs.ts) against a loopback server that is both the app's upstream and the
 * stand-in edge (POST /v1/errors/i): http, https-free fetch and console crumbs ride on the next error; no query string
 * or body is ever in them; the SDK's own posts are not recorded; `breadcrumbs: false` changes nothing.
 */
let server: Server;
let base: string;
const received: Array<Record<string, unknown>> = [];
const clients: NodeClient[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/errors/i') {
        received.push(...(JSON.parse(body).batch as Array<Record<string, unknown>>));
        return void res.writeHead(202, { 'content-type': 'application/json' }).end('{}');
      }
      const status = Number(new URL(req.url!, 'http://x').searchParams.get('status') ?? 200);
      res.writeHead(status, { 'content-type': 'text/plain' }).end('response body secret');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  received.length = 0;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const client = (over: Parameters<typeof init>[0] = {}) => {
  const c = init({ baseUrl: base, ingestKey: 'cak_live_test', captureUncaught: false, onError: () => undefined, ...over });
  clients.push(c);
  return c;
};

/** Capture an error, flush, and answer the breadcrumbs it was sent with. */
async function crumbsOfNextError(c: NodeClient, message: string): Promise<WireBreadcrumb[]> {
  c.captureException(new Error(message));
  expect(await c.flush()).toBe(true);
  const sent = received.find((e) => e.message === message);
  expect(sent).toBeDefined();
  return (sent!.breadcrumbs as WireBreadcrumb[] | undefined) ?? [];
}

const httpGet = (url: string) =>
  new Promise<number>((resolve, reject) =>
    get(url, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject),
  );

/** A port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('@cx/node breadcrumbs', () => {
  it('records http, fetch and console before an error: method, origin and path, status; never a query string or a body', async () => {
    const c = client();
    expect(await httpGet(`${base}/orders/42?token=s3cr3t-http`)).toBe(200);
    const res = await fetch(`${base}/payments?card=s3cr3t-fetch&status=502`, { method: 'POST', body: JSON.stringify({ pan: 's3cr3t-body' }) });
    expect(res.status).toBe(502);
    await res.text();
    console.warn('cache miss for', { user: 7 });

    const crumbs = await crumbsOfNextError(c, 'after the requests');
    expect(crumbs).toEqual([
      { timestamp: expect.any(Number), type: 'http', category: 'http', data: { method: 'GET', url: `${base}/orders/42`, status_code: 200 } },
      {
        timestamp: expect.any(Number),
        type: 'http',
        category: 'fetch',
        level: 'error',
        data: { method: 'POST', url: `${base}/payments`, status_code: 502 },
      },
      { timestamp: expect.any(Number), category: 'console', level: 'warning', message: 'cache miss for {"user":7}' },
    ]);
    const json = JSON.stringify(received);
    for (const secret of ['s3cr3t', 'response body']) expect(json).not.toContain(secret);
    // The edge's reader keeps them all as sent (schemas/error-context.ts).
    expect(breadcrumbsOf(crumbs)).toHaveLength(3);
  });

  it("records a request that got no answer with status 0, and leaves out the SDK's own posts to the service", async () => {
    const c = client();
    const port = await closedPort();
    await expect(fetch(`http://127.0.0.1:${port}/down?k=v`)).rejects.toThrow();
    // Recorded when the request closes, after its error.
    const failed = await new Promise<string>((resolve) => {
      let message = '';
      request(`http://127.0.0.1:${port}/also-down`, { method: 'DELETE' })
        .on('error', (e) => (message = e.message))
        .on('close', () => resolve(message))
        .end();
    });
    expect(failed).toMatch(/ECONNREFUSED/);
    const first = await crumbsOfNextError(c, 'first');
    expect(first.map((b) => [b.category, b.data?.method, b.data?.url, b.data?.status_code, b.level])).toEqual([
      ['fetch', 'GET', `http://127.0.0.1:${port}/down`, 0, 'error'],
      ['http', 'DELETE', `http://127.0.0.1:${port}/also-down`, 0, 'error'],
    ]);
    // `first` was posted to /v1/errors/i by the SDK's fetch: not a breadcrumb of the next error.
    const second = await crumbsOfNextError(c, 'second');
    expect(second.some((b) => String(b.data?.url).includes('/v1/'))).toBe(false);
    expect(second).toHaveLength(2);
  });

  it(`keeps the last ${BREADCRUMBS_MAX}, each cut to ${BREADCRUMB_TEXT} characters, within what the edge keeps`, async () => {
    expect(BREADCRUMBS_MAX).toBeLessThanOrEqual(LIMITS.errorContext.breadcrumbs);
    expect(BREADCRUMB_TEXT).toBeLessThanOrEqual(Math.min(LIMITS.errorContext.breadcrumbMessage, LIMITS.errorContext.breadcrumbDataValue));
    const c = client();
    for (let i = 0; i < BREADCRUMBS_MAX + 10; i++) c.addBreadcrumb({ category: 'app', message: `step ${i}`, data: { i } });
    c.addBreadcrumb({ category: 'app', message: 'x'.repeat(5000), data: { long: 'y'.repeat(5000) } });
    const crumbs = await crumbsOfNextError(c, 'bounded');
    expect(crumbs).toHaveLength(BREADCRUMBS_MAX);
    expect(crumbs[0]!.message).toBe('step 11');
    expect(crumbs.at(-1)!.message).toHaveLength(BREADCRUMB_TEXT);
    expect(crumbs.at(-1)!.data!.long).toHaveLength(BREADCRUMB_TEXT);
  });

  it('with breadcrumbs: false records nothing and leaves console alone; close() puts console back', async () => {
    const before = console.warn;
    const off = client({ breadcrumbs: false });
    expect(console.warn).toBe(before);
    await httpGet(`${base}/quiet`);
    expect(await crumbsOfNextError(off, 'no crumbs')).toEqual([]);

    const on = client();
    expect(console.warn).not.toBe(before);
    await on.close();
    expect(console.warn).toBe(before);
  });
});
