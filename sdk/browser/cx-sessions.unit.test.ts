import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SessionUpdateSchema } from '../../schemas/bus/client-items.ts';

/**
 * The served cx.js's sessions add-on (sdk/browser/cx-sessions.ts, issue 40) in a stand-in page, as
 * breadcrumbs.unit.test.ts sets one up: no DOM library, the globals it reads are small fakes, and `window` is the
 * global object. Each test loads the scripts afresh (a fresh module is a fresh <script>). The Chromium test
 * (test/e2e/browser-clients.e2e.test.ts) drives the real thing.
 */
type Listener = (e: unknown) => void;
let listeners: Record<string, Listener[]>;
const fire = (type: string, e: unknown = {}) => {
  for (const l of [...(listeners[type] ?? [])]) l(e);
};
const CONSOLE = { log: console.log, warn: console.warn, error: console.error };
let posted: Array<{ url: string; body: unknown; keepalive: boolean }>;
let storage: Map<string, string>;
const g = globalThis as unknown as { cx?: any };

/** Runs one of sdk/browser's scripts as a page's <script> would. */
const load = async (script: 'cx' | 'cx-sessions') => {
  vi.resetModules();
  await import(script === 'cx' ? './cx.ts' : './cx-sessions.ts');
};
type Update = { sid: string; did?: string; init: boolean; status: string; errors: number; duration?: number };
const updates = () => posted.filter((p) => p.url === '/service/v1/sessions/i').flatMap((p) => (p.body as { sessions: Update[] }).sessions);
const statuses = () => updates().map((u) => [u.init, u.status, u.errors]);

beforeEach(() => {
  listeners = {};
  posted = [];
  storage = new Map();
  vi.stubGlobal('window', globalThis);
  vi.stubGlobal('location', { pathname: '/' });
  vi.stubGlobal('history', { pushState: () => undefined, replaceState: () => undefined });
  vi.stubGlobal('addEventListener', (type: string, l: Listener, o?: { once?: boolean }) => {
    const list = (listeners[type] ??= []);
    const once: Listener = (e) => {
      list.splice(list.indexOf(once), 1);
      l(e);
    };
    list.push(o?.once ? once : l);
  });
  vi.stubGlobal('document', { addEventListener: () => undefined, visibilityState: 'visible' });
  vi.stubGlobal('localStorage', { getItem: (k: string) => storage.get(k) ?? null, setItem: (k: string, v: string) => storage.set(k, v) });
  vi.stubGlobal('fetch', async (input: string, init?: RequestInit) => {
    if (init?.body) posted.push({ url: input, body: JSON.parse(String(init.body)), keepalive: !!init.keepalive });
    return new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } });
  });
});
afterEach(() => {
  delete g.cx;
  vi.unstubAllGlobals();
  Object.assign(console, CONSOLE);
});

describe('cx-sessions.js after cx.js', () => {
  it("starts one session with cx.js's visitor id: crashed at an unhandled error, the terminal update on pagehide", async () => {
    await load('cx');
    await load('cx-sessions');
    const visitor = storage.get('cx_id');
    expect(visitor).toMatch(/^cx_/);
    expect(g.cx.sessions).toBe(true);
    expect(updates()).toEqual([expect.objectContaining({ init: true, status: 'ok', errors: 0, did: visitor })]);
    // A failed <script> or <img> is not a script error.
    fire('error', { type: 'error' });
    expect(statuses()).toEqual([[true, 'ok', 0]]);
    fire('error', { error: new TypeError('x is undefined'), message: 'x is undefined' });
    fire('unhandledrejection', { reason: new Error('later') });
    fire('pagehide');
    fire('pagehide');
    expect(statuses()).toEqual([
      [true, 'ok', 0],
      [false, 'crashed', 1],
      [false, 'crashed', 2],
    ]);
    const all = updates();
    expect(new Set(all.map((u) => u.sid)).size).toBe(1);
    expect(all.at(-1)!.duration).toBeTypeOf('number');
    for (const u of all) expect(SessionUpdateSchema.safeParse(u).success, JSON.stringify(u)).toBe(true);
    expect(posted.filter((p) => p.url.endsWith('sessions/i')).every((p) => p.keepalive)).toBe(true);
    // cx.js still captured the error itself.
    await g.cx.errors.flush();
    expect(JSON.stringify(posted.filter((p) => p.url === '/service/v1/errors/i'))).toContain('x is undefined');
  });

  it('marks errored when the page reports an error by hand (crashed wins later), exited when nothing went wrong', async () => {
    await load('cx');
    await load('cx-sessions');
    expect(g.cx.errors.captureException(new Error('handled'))).toBeUndefined();
    expect(g.cx.errors.captureMessage('also handled')).toBeUndefined();
    fire('error', { error: new Error('unhandled'), message: 'unhandled' });
    fire('pagehide');
    expect(statuses()).toEqual([
      [true, 'ok', 0],
      [false, 'errored', 1],
      [false, 'crashed', 3],
      [false, 'crashed', 3],
    ]);
    await g.cx.errors.flush();
    const sent = JSON.stringify(posted.filter((p) => p.url === '/service/v1/errors/i'));
    for (const m of ['handled', 'also handled', 'unhandled']) expect(sent).toContain(m);

    delete g.cx;
    posted = [];
    listeners = {};
    await load('cx');
    await load('cx-sessions');
    fire('pagehide');
    expect(updates().map((u) => u.status)).toEqual(['ok', 'exited']);
  });

  it('wraps captureException and captureMessage without changing their answer, arguments or this', async () => {
    const calls: unknown[][] = [];
    const errors = {
      captureException(this: unknown, ...a: unknown[]) {
        calls.push([this === errors, ...a]);
        return 'kept';
      },
      captureMessage: (...a: unknown[]) => (calls.push(a), 7),
    };
    g.cx = { errors };
    await load('cx-sessions');
    const err = new Error('x');
    expect(g.cx.errors.captureException(err, { path: '/p' })).toBe('kept');
    expect(g.cx.errors.captureMessage('m', { extra: { a: 1 } })).toBe(7);
    expect(calls).toEqual([
      [true, err, { path: '/p' }],
      ['m', { extra: { a: 1 } }],
    ]);
    expect(statuses()).toEqual([
      [true, 'ok', 0],
      [false, 'errored', 1],
    ]);
  });

  it('loaded twice, runs once: one session, each error noted once', async () => {
    await load('cx');
    await load('cx-sessions');
    await load('cx-sessions');
    g.cx.errors.captureMessage('by hand');
    fire('error', { error: new Error('boom'), message: 'boom' });
    expect(statuses()).toEqual([
      [true, 'ok', 0],
      [false, 'errored', 1],
      [false, 'crashed', 2],
    ]);
  });

  it('sends no did when the page cannot read localStorage', async () => {
    await load('cx');
    vi.stubGlobal('localStorage', {
      getItem: () => {
        throw new Error('SecurityError');
      },
    });
    await load('cx-sessions');
    expect(updates()).toHaveLength(1);
    expect(updates()[0]!.did).toBeUndefined();
    expect(SessionUpdateSchema.safeParse(updates()[0]).success).toBe(true);
  });
});

describe('cx-sessions.js without cx.js', () => {
  it('does nothing and throws nothing: no window.cx, or one without errors', async () => {
    await expect(load('cx-sessions')).resolves.toBeUndefined();
    g.cx = { capture: () => undefined };
    await load('cx-sessions');
    expect(g.cx.sessions).toBeUndefined();
    vi.stubGlobal('window', undefined);
    await expect(load('cx-sessions')).resolves.toBeUndefined();
    expect(posted).toEqual([]);
    expect(listeners).toEqual({});
  });
});
