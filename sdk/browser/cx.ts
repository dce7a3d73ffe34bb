/**
 * cx.js: the browser client of error tracking (spec §7.1), served by the service at `/v1/w/cx.js` (and under a
 * versioned, immutable name). It posts only to `/service/v1/errors/i` on the page's own origin, where the platform
 * attaches the project's ingest key (so no key is in the page), or a Node app relays it (sdk/node/forwarder.ts).
 *
 * - Captures window `error` events and unhandled rejections; `cx.errors.captureException(err, { path, extra })`,
 *   `captureMessage(text, { extra })`, `flush()`.
 * - Queues and posts every 2 s, at 10 queued, and on `pagehide` / `visibilitychange` to hidden, with
 *   `fetch(..., { keepalive: true, credentials: 'omit' })`: at most 20 events and 64 KB a request, split by bytes.
 *   Browsers fail keepalive requests past about 64 KB in flight, so bytes still in flight are counted and a
 *   request past the budget goes without keepalive (as Sentry's transport does).
 * - 429 (`Retry-After`) and 503 put the events back and wait; the queue holds at most 100 events, dropping the
 *   oldest, and the next event sent says how many were dropped (`extra.cxDropped`); an error repeated while
 *   queued is sent once with `extra.cxRepeats`.
 * - Never throws into the page.
 */
interface CxEvent {
  name: string;
  message: string;
  stack?: string;
  path: string;
  extra?: Record<string, unknown>;
  timestamp: number;
  runtime: 'browser';
}
interface Options {
  path?: string;
  extra?: Record<string, unknown>;
}

const ENDPOINT = '/service/v1/errors/i';
const FLUSH_MS = 2000;
const FLUSH_AT = 10;
const BATCH_MAX = 20;
const BYTES_MAX = 64000;
const KEEPALIVE_BUDGET = 60000;
const QUEUE_MAX = 100;

const w = window as unknown as { cx?: Record<string, unknown> };
const queue: CxEvent[] = [];
const keys: string[] = [];
let dropped = 0;
let inFlight = 0;
let waitUntil = 0;
let failures = 0;
let timer: ReturnType<typeof setTimeout> | undefined;

const cut = (s: unknown, n: number): string => String(s ?? '').slice(0, n);
const bytes = (s: string): number => new TextEncoder().encode(s).length;

function safe<A extends unknown[], R>(fn: (...a: A) => R): (...a: A) => R | undefined {
  return (...a) => {
    try {
      return fn(...a);
    } catch {
      return undefined;
    }
  };
}

function enqueue(e: CxEvent): void {
  const key = e.name + '\n' + e.message + '\n' + (e.stack || '');
  const same = keys.indexOf(key);
  if (same >= 0) {
    const extra = (queue[same]!.extra ||= {});
    extra.cxRepeats = ((extra.cxRepeats as number) || 1) + 1;
    return;
  }
  if (queue.length >= QUEUE_MAX) {
    queue.shift();
    keys.shift();
    dropped++;
  }
  if (e.extra && (safe(JSON.stringify)(e.extra)?.length ?? 1e9) > 16000) e.extra = { cxExtraTooLarge: true };
  queue.push(e);
  keys.push(key);
  if (queue.length >= FLUSH_AT) flush();
  else timer ||= setTimeout(flush, FLUSH_MS);
}

function event(name: unknown, message: unknown, stack: unknown, opts: Options = {}): CxEvent {
  return {
    name: cut(name || 'Error', 200),
    message: cut(message, 2000) || '(no message)',
    stack: stack ? cut(stack, 8192) : undefined,
    path: cut(opts.path || location.pathname, 2048),
    extra: opts.extra,
    timestamp: Date.now(),
    runtime: 'browser',
  };
}

function ofError(err: unknown, opts?: Options): CxEvent {
  if (err instanceof Error) return event(err.name, err.message, err.stack, opts);
  return event('Error', typeof err === 'string' ? err : safe(JSON.stringify)(err) ?? String(err), undefined, opts);
}

/** Post what is queued, in requests of at most 20 events and 64 KB. Resolves when the requests have answered. */
function flush(): Promise<void> {
  clearTimeout(timer);
  timer = undefined;
  const sends: Array<Promise<void>> = [];
  while (queue.length && Date.now() >= waitUntil) {
    const batch: CxEvent[] = [];
    let body = '';
    while (queue.length && batch.length < BATCH_MAX) {
      const next = queue[0]!;
      if (dropped) (next.extra ||= {}).cxDropped = dropped;
      let candidate = JSON.stringify({ batch: [...batch, next] });
      if (bytes(candidate) > BYTES_MAX) {
        if (batch.length) break;
        // One event past the request limit on its own: sent shortened, or not at all.
        next.extra = { cxTooLarge: true };
        next.stack = cut(next.stack, 2000);
        next.message = cut(next.message, 500);
        next.path = cut(next.path, 500);
        candidate = JSON.stringify({ batch: [next] });
        if (bytes(candidate) > BYTES_MAX) {
          queue.shift();
          keys.shift();
          dropped++;
          continue;
        }
      }
      dropped = 0;
      batch.push(queue.shift()!);
      keys.shift();
      body = candidate;
    }
    sends.push(send(batch, body));
  }
  if (queue.length) timer = setTimeout(flush, Math.max(FLUSH_MS, waitUntil - Date.now()));
  return Promise.all(sends).then(() => undefined);
}

function putBack(batch: CxEvent[]): void {
  for (let i = batch.length - 1; i >= 0; i--) {
    if (queue.length >= QUEUE_MAX) {
      dropped++;
      continue;
    }
    const e = batch[i]!;
    queue.unshift(e);
    keys.unshift(e.name + '\n' + e.message + '\n' + (e.stack || ''));
  }
}

function send(batch: CxEvent[], body: string): Promise<void> {
  const size = bytes(body);
  const keepalive = inFlight + size <= KEEPALIVE_BUDGET;
  if (keepalive) inFlight += size;
  return fetch(ENDPOINT, { method: 'POST', body, keepalive, credentials: 'omit', headers: { 'content-type': 'application/json' } })
    .then((res) => {
      if (res.status === 429 || res.status >= 500) {
        failures++;
        const after = Number(res.headers.get('retry-after'));
        waitUntil = Date.now() + (after > 0 ? after * 1000 : Math.min(60000, 5000 * 2 ** (failures - 1)));
        putBack(batch);
      } else failures = 0;
    })
    .catch(() => {
      failures++;
      waitUntil = Date.now() + Math.min(60000, 5000 * 2 ** (failures - 1));
      putBack(batch);
    })
    .finally(() => {
      if (keepalive) inFlight -= size;
      if (queue.length) timer ||= setTimeout(flush, Math.max(FLUSH_MS, waitUntil - Date.now()));
    });
}

const errors = {
  captureException: safe((err: unknown, opts?: Options) => enqueue(ofError(err, opts))),
  captureMessage: safe((text: unknown, opts?: Options) => enqueue(event('Message', text, undefined, opts))),
  flush: () => safe(flush)() ?? Promise.resolve(),
  /** Events dropped since the last one sent (the queue was full). */
  get dropped() {
    return dropped;
  },
};

safe(() => {
  if ((w.cx as { errors?: unknown } | undefined)?.errors) return; // loaded twice: keep the first
  w.cx = { ...(w.cx || {}), errors };
  addEventListener('error', safe((e: ErrorEvent) => {
    // A failed <script> or <img> is an Event without an error: not a script error.
    if (!e.error && !e.message) return;
    enqueue(e.error ? ofError(e.error) : event('Error', e.message, e.filename ? `    at ${e.filename}:${e.lineno}:${e.colno}` : undefined));
  }));
  addEventListener('unhandledrejection', safe((e: PromiseRejectionEvent) => enqueue(ofError(e.reason))));
  addEventListener('pagehide', safe(() => void flush()));
  document.addEventListener('visibilitychange', safe(() => document.visibilityState === 'hidden' && void flush()));
})();
