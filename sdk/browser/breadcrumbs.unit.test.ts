import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LIMITS } from '../../schemas/limits.ts';
import { breadcrumbsOf } from '../../schemas/error-context.ts';
import { SessionUpdateSchema } from '../../schemas/bus/client-items.ts';
import { recordBreadcrumbs, recordXhr } from './src/breadcrumbs.ts';
import { createErrors } from './src/errors.ts';
import { startSession } from './src/sessions.ts';
import { createTransport } from './src/transport.ts';
import { BREADCRUMB_TEXT, BREADCRUMBS_MAX, type Breadcrumb } from './src/wire.ts';

/**
 * cx.js's breadcrumbs and sessions (src/breadcrumbs.ts, src/sessions.ts) in a stand-in page: no DOM library, so the
 * globals they read (addEventListener, location, history, fetch, XMLHttpRequest, document) are small fakes, and the
 * window's listeners are called as the browser would. The Chromium test (test/e2e/browser-clients.e2e.test.ts)
 * drives the real thing.
 */
type Listener = (e: unknown) => void;
let listeners: Record<string, Listener[]>;
const fire = (type: string, e: unknown = {}) => {
  for (const l of [...(listeners[type] ?? [])]) l(e);
};
const CONSOLE = { log: console.log, warn: console.warn, error: console.error };
let posted: Array<{ url: string; body: unknown; keepalive: boolean }>;
let answer: (url: string) => Promise<Response>;

class FakeXhr extends EventTarget {
  status = 0;
  open(_method: string, _url: string) {}
  send() {
    this.status = 404;
    queueMicrotask(() => this.dispatchEvent(new Event('loadend')));
  }
}

beforeEach(() => {
  listeners = {};
  posted = [];
  answer = async () => new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  const location = { pathname: '/' };
  const go = (_s: unknown, _t: unknown, url: string) => void (location.pathname = new URL(url, 'https://shop.example').pathname);
  vi.stubGlobal('location', location);
  vi.stubGlobal('history', { pushState: go, replaceState: go });
  vi.stubGlobal('addEventListener', (type: string, l: Listener, o?: { once?: boolean }) => {
    const list = (listeners[type] ??= []);
    const once: Listener = (e) => {
      list.splice(list.indexOf(once), 1);
      l(e);
    };
    list.push(o?.once ? once : l);
  });
  vi.stubGlobal('removeEventListener', () => undefined);
  vi.stubGlobal('document', { addEventListener: () => undefined, visibilityState: 'visible' });
  vi.stubGlobal('XMLHttpRequest', class extends FakeXhr {});
  vi.stubGlobal('fetch', (input: string, init?: RequestInit) => {
    if (init?.body) posted.push({ url: input, body: JSON.parse(String(init.body)), keepalive: !!init.keepalive });
    return answer(input);
  });
});
afterEach(() => {
  vi.unstubAllGlobals();
  Object.assign(console, CONSOLE);
});

const crumbsOf = (ring: () => Breadcrumb[]) => ring().map(({ timestamp, ...rest }) => (expect(timestamp).toBeTypeOf('number'), rest));
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('browser breadcrumbs', () => {
  it('records clicks, navigation, fetch, XHR and console, in order, and the wrapped functions behave as before', async () => {
    const ring = recordBreadcrumbs('/service/v1/', recordXhr);
    fire('click', { target: { localName: 'button', id: 'buy', classList: ['primary', 'large'], value: 'typed secret', textContent: 'Buy now' } });
    history.pushState(null, '', '/cart?coupon=s3cr3t#top');
    history.replaceState(null, '', '/cart?page=2');
    (location as { pathname: string }).pathname = '/';
    fire('popstate');

    answer = async () => new Response('', { status: 201 });
    const res = await fetch('https://user:pw@api.example.com/orders?token=s3cr3t', { method: 'POST', body: '{"card":"s3cr3t"}' });
    expect(res.status).toBe(201);
    answer = async () => Promise.reject(new TypeError('Failed to fetch'));
    await expect(fetch('/api/down')).rejects.toThrow('Failed to fetch');
    await fetch('/service/v1/errors/i', {}).catch(() => undefined);
    const x = new XMLHttpRequest();
    x.open('GET', '/api/legacy?session=s3cr3t');
    x.send();
    await settle();

    const log = vi.fn();
    console.warn = () => undefined;
    console.log = log;
    recordBreadcrumbs('/service/v1/'); // wraps the stand-in too; its own ring
    console.log = log;
    const consoleRing = recordBreadcrumbs('/service/v1/');
    console.log('cart', 3, { id: 1 });
    expect(log).toHaveBeenCalledWith('cart', 3, { id: 1 });
    console.warn('slow');

    expect(crumbsOf(ring).slice(0, 6)).toEqual([
      { category: 'ui.click', message: 'button#buy.primary' },
      { category: 'navigation', data: { from: '/', to: '/cart' } },
      { category: 'navigation', data: { from: '/cart', to: '/' } },
      { category: 'fetch', data: { method: 'POST', url: 'https://api.example.com/orders', status_code: 201 } },
      { category: 'fetch', data: { method: 'GET', url: '/api/down', status_code: 0 }, level: 'error' },
      { category: 'xhr', data: { method: 'GET', url: '/api/legacy', status_code: 404 }, level: 'error' },
    ]);
    expect(crumbsOf(consoleRing)).toEqual([
      { category: 'console', message: 'cart 3 [object Object]', level: 'log' },
      { category: 'console', message: 'slow', level: 'warn' },
    ]);
    const json = JSON.stringify(ring());
    for (const never of ['s3cr3t', 'pw@', 'typed secret', 'Buy now', 'errors/i']) expect(json).not.toContain(never);
    // The edge's reader keeps them as sent.
    expect(breadcrumbsOf(ring())).toHaveLength(ring().length);
  });

  it(`keeps the last ${BREADCRUMBS_MAX}, messages and URLs cut to ${BREADCRUMB_TEXT}, within what the edge keeps`, async () => {
    expect(BREADCRUMBS_MAX).toBeLessThanOrEqual(LIMITS.errorContext.breadcrumbs);
    expect(BREADCRUMB_TEXT).toBeLessThanOrEqual(Math.min(LIMITS.errorContext.breadcrumbMessage, LIMITS.errorContext.breadcrumbDataValue));
    console.error = () => undefined;
    const ring = recordBreadcrumbs('/service/v1/');
    for (let i = 0; i < BREADCRUMBS_MAX + 10; i++) console.error(`e${i}`);
    console.error('x'.repeat(5000));
    await fetch(`/${'p'.repeat(5000)}`);
    const kept = ring();
    expect(kept).toHaveLength(BREADCRUMBS_MAX);
    expect(kept[0]!.message).toBe('e12');
    expect(kept.at(-2)!.message).toHaveLength(BREADCRUMB_TEXT);
    expect(kept.at(-1)!.data!.url).toHaveLength(BREADCRUMB_TEXT);
  });

  it('are sent with each error (a copy of the ring then), and breadcrumbs: false records none', async () => {
    const errors = createErrors(createTransport(), {});
    history.pushState(null, '', '/checkout');
    errors.captureException(new Error('first'));
    history.pushState(null, '', '/done');
    errors.captureException(new Error('second'));
    await errors.flush();
    const [first, second] = (posted.find((p) => p.url === '/service/v1/errors/i')!.body as { batch: Array<{ breadcrumbs: Breadcrumb[] }> }).batch;
    expect(first!.breadcrumbs.map((b) => b.data?.to)).toEqual(['/checkout']);
    expect(second!.breadcrumbs.map((b) => b.data?.to)).toEqual(['/checkout', '/done']);
    // The error route's own post is not a breadcrumb.
    errors.captureMessage('third');
    await errors.flush();
    expect(JSON.stringify(posted.at(-1)!.body)).not.toContain('errors/i');

    vi.unstubAllGlobals();
    Object.assign(console, CONSOLE);
    const log = console.log;
    const fetchBefore = globalThis.fetch;
    createErrors(createTransport(), { breadcrumbs: false, captureGlobal: false });
    expect(console.log).toBe(log);
    expect(globalThis.fetch).toBe(fetchBefore);
  });
});

describe('browser sessions (sessions: true)', () => {
  const updates = () => posted.filter((p) => p.url === '/service/v1/sessions/i').flatMap((p) => (p.body as { sessions: unknown[] }).sessions);

  it('sends init at load, crashed at an unhandled error, and a terminal update on pagehide, each a SessionUpdate', async () => {
    createErrors(createTransport(), { sessions: true, breadcrumbs: false }, { session: startSession }, 'visitor-1');
    expect(updates()).toEqual([expect.objectContaining({ init: true, status: 'ok', errors: 0, did: 'visitor-1' })]);
    fire('error', { error: new TypeError('x is undefined'), message: 'x is undefined' });
    fire('error', { error: new TypeError('again'), message: 'again' });
    fire('pagehide');
    fire('pagehide');
    await settle();
    const all = updates() as Array<Record<string, unknown>>;
    expect(all.map((u) => [u.init, u.status, u.errors])).toEqual([
      [true, 'ok', 0],
      [false, 'crashed', 1],
      [false, 'crashed', 2],
    ]);
    expect(new Set(all.map((u) => u.sid)).size).toBe(1);
    expect(all.at(-1)!.duration).toBeTypeOf('number');
    for (const u of all) expect(SessionUpdateSchema.safeParse(u).success, JSON.stringify(u)).toBe(true);
    expect(posted.filter((p) => p.url.endsWith('sessions/i')).every((p) => p.keepalive)).toBe(true);
  });

  it('marks errored at a handled error (crashed wins later), exited when nothing went wrong; off by default', async () => {
    const errors = createErrors(createTransport(), { sessions: true, breadcrumbs: false }, { session: startSession });
    errors.captureException(new Error('handled'));
    errors.captureMessage('also handled');
    fire('unhandledrejection', { reason: new Error('unhandled') });
    expect((updates() as Array<{ status: string; errors: number }>).map((u) => [u.status, u.errors])).toEqual([
      ['ok', 0],
      ['errored', 1],
      ['crashed', 3],
    ]);

    posted = [];
    listeners = {};
    createErrors(createTransport(), { sessions: true, breadcrumbs: false }, { session: startSession });
    fire('pagehide');
    expect((updates() as Array<{ status: string }>).map((u) => u.status)).toEqual(['ok', 'exited']);

    posted = [];
    createErrors(createTransport(), { breadcrumbs: false }, { session: startSession });
    createErrors(createTransport(), { sessions: true, breadcrumbs: false });
    expect(updates()).toEqual([]);
  });
});

describe('the served cx.js (sdk/browser/cx.ts)', () => {
  it('records breadcrumbs but leaves XHR and sessions out, within its 3 KB (built as the edge builds it)', async () => {
    const out = await build({
      entryPoints: [path.join(path.dirname(fileURLToPath(import.meta.url)), 'cx.ts')],
      bundle: true,
      minify: true,
      format: 'iife',
      target: 'es2019',
      write: false,
      legalComments: 'none',
      logLevel: 'silent',
    });
    const code = Buffer.from(out.outputFiles[0]!.contents);
    for (const part of ['ui.click', 'navigation', 'pushState', 'status_code', 'console']) expect(code.toString()).toContain(part);
    for (const part of ['XMLHttpRequest', 'sessions/i', 'crashed']) expect(code.toString()).not.toContain(part);
    expect(gzipSync(code, { level: 9 }).length).toBeLessThanOrEqual(3 * 1024);
  });
});
