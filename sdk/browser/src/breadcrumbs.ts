import { cut, here, safe } from './transport.ts';
import { BREADCRUMB_TEXT, BREADCRUMBS_MAX, type Breadcrumb } from './wire.ts';

/**
 * Breadcrumbs (issue 40): what happened before an error, the last 50 in a ring, a copy sent with each error event.
 *  1. clicks: a short selector of the element clicked and two of its parents (`div#cart > button.buy`), each its tag,
 *     id and first class; never text content, never an input's value (category `ui.click`);
 *  2. navigation: `history.pushState` / `replaceState` and `popstate`, `{ from, to }` paths (no query string);
 *  3. fetch and XMLHttpRequest: `{ method, url, status_code }` (0 when the request failed, level `error` from 400),
 *     the URL without its query string, fragment and credentials (they may hold tokens), never a body; the client's
 *     own requests (to `own`) are left out;
 *  4. console: `console.log` / `warn` / `error`, the arguments as text (as Sentry joins them), level the method.
 * Messages and URLs are cut (wire.ts). Wrappers call the page's own functions with the same arguments and return what
 * they return; recording never throws into the page. Outside a page (no `addEventListener`) nothing is recorded.
 * Small on purpose: this is in cx.js.
 */
export type Crumbs = () => Breadcrumb[];
/** Records one request: its category, method, URL (bare) and status (0 when it failed). */
export type RecordHttp = (category: string, method: unknown, url: string, status: number) => unknown;

type Fn = (this: unknown, ...a: unknown[]) => unknown;
type Xhr = XMLHttpRequest & { _cx?: [unknown, string] };

/** A URL without credentials, query string or fragment. */
const bare = (u: unknown) =>
  cut(
    String(u)
      .replace(/\/\/[^/@]*@/, '//')
      .split(/[?#]/)[0],
    BREADCRUMB_TEXT,
  );

/** `o[name]` replaced by a function that calls it as it was, then `after(its result, the arguments, this)`. */
function wrap<T>(o: T, name: keyof T, after: (r: never, a: never, self: never) => unknown): void {
  const f = o[name] as Fn | undefined;
  if (f)
    o[name] = function (this: unknown, ...a: unknown[]) {
      const r = f.apply(this, a);
      safe(after as Fn)(r, a, this);
      return r;
    } as T[keyof T];
}

export function recordBreadcrumbs(own: string, xhr?: (http: RecordHttp) => void): Crumbs {
  const ring: Breadcrumb[] = [];
  const add = (category: string, message?: string, data?: Breadcrumb['data'], level?: string) =>
    ring.push({ timestamp: Date.now(), category, message: message && cut(message, BREADCRUMB_TEXT), data, level }) > BREADCRUMBS_MAX && ring.shift();
  const http: RecordHttp = (category, method, url, status) =>
    url.indexOf(own) < 0 &&
    add(category, undefined, { method: cut(method || 'GET', 16), url, status_code: status }, status && status < 400 ? undefined : 'error');

  // 1. clicks
  addEventListener(
    'click',
    safe(({ target: el }: Event & { target: Element }) =>
      add('ui.click', el.localName + (el.id ? `#${el.id}` : '') + (el.classList[0] ? `.${el.classList[0]}` : '')),
    ) as EventListener,
    true,
  );

  // 2. navigation
  let from = here();
  const nav = () => {
    const to = here();
    if (to !== from) add('navigation', undefined, { from, to });
    from = to;
  };
  wrap(history, 'pushState', nav);
  wrap(history, 'replaceState', nav);
  addEventListener('popstate', nav);

  // 3. fetch and XMLHttpRequest
  wrap(globalThis, 'fetch', (r: Promise<Response>, [input, init]: [Request, RequestInit?]) => {
    // A failed request's reason has no status: 0.
    const done = safe((res: Response) => http('fetch', (init && init.method) || input.method, bare(input.url || input), res.status || 0));
    r.then(done, done);
  });
  if (xhr) xhr(http);

  // 4. console
  for (const level of ['log', 'warn', 'error'] as const) wrap(console, level, (_, a: unknown[]) => add('console', a.join(' '), undefined, level));
  return () => ring.slice();
}

/** XMLHttpRequest breadcrumbs (the package's builds; cx.js leaves them out to stay within its size budget). */
export function recordXhr(http: RecordHttp): void {
  wrap(XMLHttpRequest.prototype, 'open', (_, a: unknown[], x: Xhr) => {
    x._cx ||
      x.addEventListener(
        'loadend',
        safe(() => http('xhr', x._cx![0], x._cx![1], x.status)),
      );
    x._cx = [a[0], bare(a[1])];
  });
}
