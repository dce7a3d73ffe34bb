import { REQUEST_BYTES, WIRE_SITE_BASE } from './wire.ts';

/**
 * How the browser client reaches the service, and its send queues. On a site the platform serves, the routes are the
 * site's own `/service/v1/...`, where the platform attaches the project's ingest key (§7.1: no key in the page); any
 * other page names the service's base URL and an ingest key, sent as `x-service-analytics-key`.
 *
 * A queue posts every 2 s, at 10 queued, and when the page is left, with `fetch(..., { keepalive: true, credentials:
 * 'omit' })`: at most `perRequest` events and 64 KB a request, split by bytes. Browsers fail keepalive requests past
 * about 64 KB in flight, so bytes still in flight are counted and a request past the budget goes without keepalive
 * (as Sentry's transport does). 429 (`Retry-After`) and 503 put the events back and wait; a queue holds at most 100
 * events, dropping the oldest, and the next event sent says how many were dropped; an event with a key `k` repeated
 * while queued is sent once. An answer that is not the service's JSON (the app's own HTML page: nothing relays the
 * path) is a failure too: the events stay queued, and `misrouted` counts it. Never throws into the page.
 */
export interface TransportOptions {
  /** The service's routes: `/service/v1/` (default, a site the platform serves) or e.g. `https://ingest.example.com/v1/`. */
  baseUrl?: string;
  /** An ingest key (`cak_live_...`), for pages the platform does not serve. */
  ingestKey?: string;
}

export interface Transport {
  readonly base: string;
  readonly headers: Record<string, string>;
  /** Answers that did not come from the service (no JSON): the same-origin path is not relayed here. */
  misrouted: number;
  /** Bytes of keepalive requests still in flight. */
  inFlight: number;
}

export type QueuedEvent = Record<string, unknown> & { k?: string };

export interface Queue {
  add(e: QueuedEvent): void;
  flush(): Promise<void>;
  readonly dropped: number;
}

const FLUSH_MS = 2000;
const FLUSH_AT = 10;
const KEEPALIVE_BUDGET = 60000;
const QUEUE_MAX = 100;

export const cut = (s: unknown, n: number): string => (s == null ? '' : String(s)).slice(0, n);
/** An id unlikely to repeat (the visitor's, a session's). */
export const randomId = (): string => Math.random().toString(36).slice(2) + Date.now().toString(36);
/** The page's path, or '' outside a page. */
export const here = (): string => (typeof location === 'undefined' ? '' : cut(location.pathname, 2048));
const bytes = (s: string): number => new TextEncoder().encode(s).length;

export function safe<A extends unknown[], R>(fn: (...a: A) => R): (...a: A) => R | undefined {
  return (...a) => {
    try {
      return fn(...a);
    } catch {
      return undefined;
    }
  };
}

export function createTransport(opts: TransportOptions = {}): Transport {
  const base = (opts.baseUrl || WIRE_SITE_BASE).replace(/\/*$/, '/');
  return { base, headers: opts.ingestKey ? { 'x-service-analytics-key': opts.ingestKey } : {}, misrouted: 0, inFlight: 0 };
}

/** Whether an answer is the service's: JSON, or 204 with no body (a paused project). */
export function fromService(t: Transport, res: Response): boolean {
  if (res.status === 204 || (res.headers.get('content-type') || '').includes('json')) return true;
  t.misrouted++;
  return false;
}

/** The queue's own bookkeeping never leaves the page. */
const strip = (key: string, value: unknown) => (key === 'k' ? undefined : value);

/** One queue of events for one route. `dropNote` marks the next event sent with how many were dropped. */
export function createQueue(t: Transport, route: string, perRequest: number, dropNote: (e: QueuedEvent, n: number) => void): Queue {
  const q: QueuedEvent[] = [];
  let dropped = 0;
  let waitUntil = 0;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const later = () => (timer ||= setTimeout(flush, Math.max(FLUSH_MS, waitUntil - Date.now())));

  function add(e: QueuedEvent): void {
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
      const batch: QueuedEvent[] = [];
      let body = '';
      while (q.length && batch.length < perRequest) {
        const next = q[0]!;
        if (dropped) dropNote(next, dropped);
        let candidate = JSON.stringify({ batch: [...batch, next] }, strip);
        if (bytes(candidate) > REQUEST_BYTES) {
          if (batch.length) break;
          // One event past the request limit on its own: sent shortened, or not at all.
          for (const f of ['stack', 'message', 'path']) if (typeof next[f] === 'string') next[f] = cut(next[f], 500);
          next.extra = next.properties = next.breadcrumbs = undefined;
          candidate = JSON.stringify({ batch: [next] }, strip);
          if (bytes(candidate) > REQUEST_BYTES) {
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

  function retry(batch: QueuedEvent[], afterSec: number): void {
    failures++;
    waitUntil = Date.now() + (afterSec > 0 ? afterSec * 1000 : Math.min(60000, 5000 * 2 ** (failures - 1)));
    for (let i = batch.length - 1; i >= 0; i--) {
      if (q.length >= QUEUE_MAX) dropped++;
      else q.unshift(batch[i]!);
    }
  }

  function send(batch: QueuedEvent[], body: string): Promise<void> {
    const size = bytes(body);
    const keepalive = t.inFlight + size <= KEEPALIVE_BUDGET;
    if (keepalive) t.inFlight += size;
    return post(t, route, body, keepalive)
      .then((res) => {
        if (!fromService(t, res)) retry(batch, 0);
        else if (res.status === 429 || res.status >= 500) retry(batch, Number(res.headers.get('retry-after')));
        else failures = 0;
      })
      .catch(() => retry(batch, 0))
      .finally(() => {
        if (keepalive) t.inFlight -= size;
        if (q.length) later();
      });
  }

  return {
    add,
    flush: () => safe(flush)() || Promise.resolve(),
    get dropped() {
      return dropped;
    },
  };
}

/** POST a JSON body to one of the service's routes, without cookies. */
export const post = (t: Transport, route: string, body: string, keepalive: boolean): Promise<Response> =>
  fetch(t.base + route, { method: 'POST', body, keepalive, credentials: 'omit', headers: { 'content-type': 'application/json', ...t.headers } });

/** `e[field]` as an object, made when absent, to note how many events were dropped before this one. */
export const noteDropped = (e: QueuedEvent, field: 'extra' | 'properties', key: string, n: number): void => {
  const bag = (e[field] || (e[field] = {})) as Record<string, unknown>;
  bag[key] = n;
};

/** Calls `leave` when the page is left (pagehide, or hidden), once per event. */
export function onLeave(leave: () => void): void {
  if (typeof document === 'undefined') return;
  const go = safe(leave);
  addEventListener('pagehide', go);
  document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && go());
}
