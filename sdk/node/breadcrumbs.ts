import dc from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { BREADCRUMB_TEXT, BREADCRUMBS_MAX, type WireBreadcrumb } from './wire.ts';

/**
 * Breadcrumbs for the Node SDK (issue 40): what the process did before an error, the last 50 in a ring, a copy sent
 * with each error event (`breadcrumbs`, oldest first).
 *  1. console: `console.log` / `info` / `warn` / `error` / `debug`, the arguments as text (as util.format would join
 *     them, cut), level the method. Node 20 has no console channel, so the five methods are wrapped: each calls the
 *     method it replaced with the same arguments and returns what it returns; `close()` puts them back;
 *  2. http and https: `node:diagnostics_channel`'s `http.client.request.start` and `http.client.response.finish`,
 *     `{ method, url, status_code }` (category `http`); a request that ends with no response (refused, reset, timed
 *     out) is recorded with status 0 when it closes: a `close` listener, which changes nothing of the request;
 *  3. fetch: undici's `undici:request:create`, `undici:request:headers` and `undici:request:error` channels (Node's
 *     own fetch publishes them), the same data (category `fetch`).
 * Only channels are subscribed for requests: no module is patched, and nothing else of the application changes.
 * Never recorded: request or response bodies, headers, and the query string (the URL is origin and path; a query may
 * hold tokens), nor the SDK's own requests to the service (`own`). Every text is cut to BREADCRUMB_TEXT; errors
 * are `level: "error"`, like a status of 400 or more.
 */
export interface BreadcrumbRecorder {
  /** The ring, oldest first (a copy). */
  list(): WireBreadcrumb[];
  /** A breadcrumb of the application's own (`timestamp` defaults to now); cut to the same bounds. */
  add(crumb: Partial<WireBreadcrumb>): void;
  /** Unsubscribe and put the console methods back. */
  close(): void;
}

const CONSOLE_LEVELS = { log: 'log', info: 'info', warn: 'warning', error: 'error', debug: 'debug' } as const;
type ConsoleMethod = keyof typeof CONSOLE_LEVELS;

const cut = (s: unknown, n = BREADCRUMB_TEXT) => String(s).slice(0, n);
/** A URL of origin and path: no query string, no fragment, no credentials. */
const bare = (origin: string, path: string) => cut(`${origin.replace(/\/\/[^/@]*@/, '//')}${path.split(/[?#]/)[0]}`);

function text(args: unknown[]): string {
  let out = '';
  for (const a of args) {
    let s: string;
    try {
      s = typeof a === 'string' ? a : a instanceof Error ? `${a.name}: ${a.message}` : (JSON.stringify(a) ?? String(a));
    } catch {
      s = Object.prototype.toString.call(a);
    }
    out += (out ? ' ' : '') + s;
    if (out.length >= BREADCRUMB_TEXT) break;
  }
  return cut(out);
}

export function recordBreadcrumbs(opts: { own: (url: string) => boolean; console?: boolean }): BreadcrumbRecorder {
  const ring: WireBreadcrumb[] = [];
  const push = (b: WireBreadcrumb) => {
    ring.push(b);
    if (ring.length > BREADCRUMBS_MAX) ring.shift();
  };
  const request = (category: string, method: unknown, url: string, status: number) => {
    if (opts.own(url)) return;
    const crumb: WireBreadcrumb = { timestamp: Date.now(), type: 'http', category, data: { method: cut(method ?? 'GET', 16), url, status_code: status } };
    if (!status || status >= 400) crumb.level = 'error';
    push(crumb);
  };
  const quietly =
    <A extends unknown[]>(fn: (...a: A) => void) =>
    (...a: A) => {
      try {
        fn(...a);
      } catch {
        // never into the application
      }
    };

  // 1. console
  const restore: Array<() => void> = [];
  if (opts.console !== false)
    for (const method of Object.keys(CONSOLE_LEVELS) as ConsoleMethod[]) {
      const original = console[method];
      const wrapped = function (this: unknown, ...args: unknown[]) {
        quietly(() => push({ timestamp: Date.now(), category: 'console', level: CONSOLE_LEVELS[method], message: text(args) }))();
        return original.apply(this, args);
      };
      console[method] = wrapped;
      restore.push(() => {
        if (console[method] === wrapped) console[method] = original;
      });
    }

  // 2. http and https
  const url = (req: ClientRequest) => bare(`${req.protocol}//${req.getHeader('host') ?? req.host}`, req.path);
  const answered = new WeakSet<ClientRequest>();
  const onStart = quietly(({ request: req }: { request: ClientRequest }) => {
    req.once(
      'close',
      quietly(() => {
        if (!answered.has(req)) request('http', req.method, url(req), 0);
      }),
    );
  });
  const onResponse = quietly(({ request: req, response }: { request: ClientRequest; response: IncomingMessage }) => {
    answered.add(req);
    request('http', req.method, url(req), response.statusCode ?? 0);
  });

  // 3. fetch (undici)
  type UndiciRequest = { origin: string | URL; path: string; method: string };
  const onFetchHeaders = quietly(({ request: req, response }: { request: UndiciRequest; response: { statusCode: number } }) =>
    request('fetch', req.method, bare(String(req.origin), req.path), response.statusCode),
  );
  const onFetchError = quietly(({ request: req }: { request: UndiciRequest }) => request('fetch', req.method, bare(String(req.origin), req.path), 0));

  const channels: Array<[string, (m: never) => void]> = [
    ['http.client.request.start', onStart],
    ['http.client.response.finish', onResponse],
    ['undici:request:headers', onFetchHeaders],
    ['undici:request:error', onFetchError],
  ];
  for (const [name, fn] of channels) dc.subscribe(name, fn as (m: unknown) => void);

  return {
    list: () => ring.slice(),
    add: quietly((crumb: Partial<WireBreadcrumb>) => {
      const b: WireBreadcrumb = { timestamp: typeof crumb.timestamp === 'number' ? crumb.timestamp : Date.now() };
      for (const k of ['type', 'category', 'level'] as const) if (crumb[k] !== undefined) b[k] = cut(crumb[k], 64);
      if (crumb.message !== undefined) b.message = cut(crumb.message);
      if (crumb.data && typeof crumb.data === 'object') {
        const data: Record<string, string | number | boolean> = {};
        for (const [k, v] of Object.entries(crumb.data).slice(0, 20)) data[cut(k, 64)] = typeof v === 'number' || typeof v === 'boolean' ? v : cut(v);
        b.data = data;
      }
      push(b);
    }),
    close() {
      for (const [name, fn] of channels) dc.unsubscribe(name, fn as (m: unknown) => void);
      for (const r of restore.splice(0)) r();
    },
  };
}
