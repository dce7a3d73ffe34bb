import { LIMITS } from '../../schemas/limits.ts';

/**
 * cx.js: the browser client (spec §7.1), served by the service at `/v1/w/cx.js` (and under a versioned, immutable
 * name). It talks only to `/service/v1/...` on the page's own origin, where the platform attaches the project's ingest
 * key (so no key is in the page), or a Node app relays it (sdk/node/forwarder.ts).
 *
 * Errors: window `error` events and unhandled rejections are captured; `cx.errors.captureException(err, { path,
 * extra })`, `captureMessage(text, { extra })`, `flush()`. Analytics: `cx.capture(event, properties)`. Flags:
 * `cx.flags.isEnabled(key)`, `getVariant(key)`, `ready()` (they answer from the flags loaded at start; off until
 * then). The visitor's id is kept in localStorage (`cx_id`); `cx.identify(id)` replaces it.
 *
 * Each queue posts every 2 s, at 10 queued, and on `pagehide` / `visibilitychange` to hidden, with
 * `fetch(..., { keepalive: true, credentials: 'omit' })`: at most 20 errors (100 analytics events) and 64 KB a
 * request, split by bytes. Browsers fail keepalive requests past about 64 KB in flight, so bytes still in flight are
 * counted and a request past the budget goes without keepalive (as Sentry's transport does). 429 (`Retry-After`) and
 * 503 put the events back and wait; a queue holds at most 100 events, dropping the oldest, and the next event sent
 * says how many were dropped (`extra.cxDropped`, `properties.$dropped`); an error repeated while queued is sent once
 * with `extra.cxRepeats`. An answer that is not the service's JSON (the app's own HTML page: nothing relays the path)
 * is a failure too: the events stay queued and wait, flags keep what they had, and `cx.misrouted` counts it. Never
 * throws into the page.
 */
interface Options {
  path?: string;
  extra?: Record<string, unknown>;
}
type Ev = Record<string, unknown> & { k?: string };

const BASE = '/service/v1/';
const FLUSH_MS = 2000;
const FLUSH_AT = 10;
/** Under the edge's request limits (schemas/limits.ts) and the keepalive budget of a page being left. */
const BYTES_MAX = Math.min(64000, LIMITS.errorBatch.maxBodyBytes, LIMITS.analyticsBatch.maxBodyBytes);
const KEEPALIVE_BUDGET = 60000;
const QUEUE_MAX = 100;

const w = window as unknown as { cx?: Record<string, unknown> };
let inFlight = 0;
/** Answers that did not come from the service (no JSON): the same-origin path is not relayed here. */
let misrouted = 0;
function fromService(res: Response): boolean {
  // The service answers JSON, or 204 with no body (a paused project).
  if (res.status === 204 || (res.headers.get('content-type') || '').includes('json')) return true;
  misrouted++;
  return false;
}

const cut = (s: unknown, n: number): string => String(s ?? '').slice(0, n);
const bytes = (s: string): number => new TextEncoder().encode(s).length;
const here = () => cut(location.pathname, 2048);

function safe<A extends unknown[], R>(fn: (...a: A) => R): (...a: A) => R | undefined {
  return (...a) => {
    try {
      return fn(...a);
    } catch {
      return undefined;
    }
  };
}

/**
 * One queue of events for one route. `dropNote` marks the next event sent with how many were dropped; events with a
 * `k` (errors) repeated while queued are sent once, counted in `extra.cxRepeats`.
 */
function queue(route: string, perRequest: number, dropNote: (e: Ev, n: number) => void) {
  const q: Ev[] = [];
  let dropped = 0;
  let waitUntil = 0;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const later = () => (timer ||= setTimeout(flush, Math.max(FLUSH_MS, waitUntil - Date.now())));

  function add(e: Ev): void {
    const same = e.k ? q.find((x) => x.k === e.k) : undefined;
    if (same) {
      const extra = ((same.extra as Record<string, number>) ||= {});
      extra.cxRepeats = (extra.cxRepeats || 1) + 1;
      return;
    }
    if (q.length >= QUEUE_MAX) {
      q.shift();
      dropped++;
    }
    q.push(e);
    if (q.length >= FLUSH_AT) void flush();
    else later();
  }

  function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    const sends: Array<Promise<void>> = [];
    while (q.length && Date.now() >= waitUntil) {
      const batch: Ev[] = [];
      let body = '';
      while (q.length && batch.length < perRequest) {
        const next = q[0]!;
        if (dropped) dropNote(next, dropped);
        let candidate = JSON.stringify({ batch: [...batch, next] }, strip);
        if (bytes(candidate) > BYTES_MAX) {
          if (batch.length) break;
          // One event past the request limit on its own: sent shortened, or not at all.
          for (const f of ['stack', 'message', 'path']) if (typeof next[f] === 'string') next[f] = cut(next[f], 500);
          next.extra = next.properties = undefined;
          candidate = JSON.stringify({ batch: [next] }, strip);
          if (bytes(candidate) > BYTES_MAX) {
            q.shift();
            dropped++;
            continue;
          }
        }
        dropped = 0;
        batch.push(q.shift()!);
        body = candidate;
      }
      sends.push(send(batch, body));
    }
    if (q.length) later();
    return Promise.all(sends).then(() => undefined);
  }

  function retry(batch: Ev[], afterSec: number): void {
    failures++;
    waitUntil = Date.now() + (afterSec > 0 ? afterSec * 1000 : Math.min(60000, 5000 * 2 ** (failures - 1)));
    for (let i = batch.length - 1; i >= 0; i--) {
      if (q.length >= QUEUE_MAX) dropped++;
      else q.unshift(batch[i]!);
    }
  }

  function send(batch: Ev[], body: string): Promise<void> {
    const size = bytes(body);
    const keepalive = inFlight + size <= KEEPALIVE_BUDGET;
    if (keepalive) inFlight += size;
    return fetch(BASE + route, { method: 'POST', body, keepalive, credentials: 'omit', headers: { 'content-type': 'application/json' } })
      .then((res) => {
        if (!fromService(res)) retry(batch, 0);
        else if (res.status === 429 || res.status >= 500) retry(batch, Number(res.headers.get('retry-after')));
        else failures = 0;
      })
      .catch(() => retry(batch, 0))
      .finally(() => {
        if (keepalive) inFlight -= size;
        if (q.length) later();
      });
  }

  return {
    add,
    flush,
    get dropped() {
      return dropped;
    },
  };
}

/** The queue's own bookkeeping never leaves the page. */
const strip = (key: string, value: unknown) => (key === 'k' ? undefined : value);

/** `e[field]` as an object, made when absent, to note how many events were dropped before this one. */
const noteDropped = (e: Ev, field: 'extra' | 'properties', key: string, n: number) => {
  const bag = (e[field] || (e[field] = {})) as Record<string, unknown>;
  bag[key] = n;
};
const errorsQueue = queue('errors/i', LIMITS.errorBatch.maxEvents, (e, n) => noteDropped(e, 'extra', 'cxDropped', n));
const eventsQueue = queue('analytics/i', LIMITS.analyticsBatch.maxEvents, (e, n) => noteDropped(e, 'properties', '$dropped', n));

function errorEvent(name: unknown, message: unknown, stack: unknown, opts: Options = {}): Ev {
  const e: Ev = {
    name: cut(name || 'Error', 200),
    message: cut(message, 2000) || '(no message)',
    stack: stack ? cut(stack, 8192) : undefined,
    path: opts.path ? cut(opts.path, 2048) : here(),
    timestamp: Date.now(),
    runtime: 'browser',
  };
  if (opts.extra && (safe(JSON.stringify)(opts.extra)?.length ?? 1e9) <= 16000) e.extra = opts.extra;
  else if (opts.extra) e.extra = { cxExtraTooLarge: true };
  e.k = `${e.name}\n${e.message}\n${e.stack || ''}`;
  return e;
}

function ofError(err: unknown, opts?: Options): Ev {
  if (err instanceof Error) return errorEvent(err.name, err.message, err.stack, opts);
  return errorEvent('Error', typeof err === 'string' ? err : (safe(JSON.stringify)(err) ?? String(err)), undefined, opts);
}

let visitor = safe(() => localStorage.getItem('cx_id'))() || `cx_${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
safe(() => localStorage.setItem('cx_id', visitor))();
const uuid = () => safe(() => crypto.randomUUID())() || undefined;

interface FlagAnswer {
  enabled: boolean;
  variant: string | null;
}
let flags: Record<string, FlagAnswer> = {};
let flagsLoad: Promise<void> = Promise.resolve();
function loadFlags(): Promise<void> {
  return (flagsLoad = fetch(`${BASE}flags/i?distinctId=${encodeURIComponent(visitor)}`, { credentials: 'omit' })
    .then((r) => (r.ok && fromService(r) ? r.json() : { flags }))
    .then((b) => void (flags = b.flags || flags))
    .catch(() => undefined));
}

const errors = {
  captureException: safe((err: unknown, opts?: Options) => errorsQueue.add(ofError(err, opts))),
  captureMessage: safe((text: unknown, opts?: Options) => errorsQueue.add(errorEvent('Message', text, undefined, opts))),
  flush: () => safe(errorsQueue.flush)() ?? Promise.resolve(),
  /** Errors dropped since the last one sent (the queue was full). */
  get dropped() {
    return errorsQueue.dropped;
  },
};

safe(() => {
  if ((w.cx as { errors?: unknown } | undefined)?.errors) return; // loaded twice: keep the first
  w.cx = {
    ...(w.cx || {}),
    errors,
    capture: safe((event: unknown, properties?: Record<string, unknown>) =>
      eventsQueue.add({ event: cut(event, 200), distinctId: visitor, properties: properties || {}, timestamp: Date.now(), uuid: uuid(), path: here() }),
    ),
    identify: safe((id: unknown) => {
      visitor = cut(id, 200) || visitor;
      safe(() => localStorage.setItem('cx_id', visitor))();
      return loadFlags();
    }),
    flush: () => Promise.all([errors.flush(), safe(eventsQueue.flush)()]),
    get misrouted() {
      return misrouted;
    },
    flags: {
      isEnabled: (key: string) => !!flags[key]?.enabled,
      getVariant: (key: string) => (flags[key]?.enabled ? flags[key]!.variant : null),
      ready: () => flagsLoad,
      reload: () => loadFlags(),
    },
  };
  void loadFlags();
  addEventListener(
    'error',
    safe((e: ErrorEvent) => {
      // A failed <script> or <img> is an Event without an error: not a script error.
      if (!e.error && !e.message) return;
      errorsQueue.add(e.error ? ofError(e.error) : errorEvent('Error', e.message, e.filename ? `    at ${e.filename}:${e.lineno}:${e.colno}` : undefined));
    }),
  );
  addEventListener(
    'unhandledrejection',
    safe((e: PromiseRejectionEvent) => errorsQueue.add(ofError(e.reason))),
  );
  const leave = safe(() => {
    void errorsQueue.flush();
    void eventsQueue.flush();
  });
  addEventListener('pagehide', leave);
  document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && leave());
})();
