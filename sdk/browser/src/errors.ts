import { recordBreadcrumbs, recordXhr } from './breadcrumbs.ts';
import { debugIdsOf } from './debug-ids.ts';
import { startSession } from './sessions.ts';
import { createQueue, createTransport, cut, here, noteDropped, onLeave, safe, type QueuedEvent, type Transport, type TransportOptions } from './transport.ts';
import { ERROR_BATCH_EVENTS } from './wire.ts';

/**
 * Browser errors (spec §7.1): window `error` events and unhandled rejections are captured (with `captureGlobal`, the
 * default); `captureException(err, { path, extra })`, `captureMessage(text, { extra })`, `flush()`. Events are
 * queued and sent as transport.ts says; an error repeated while queued is sent once with `extra.cxRepeats`, and the
 * next error sent after drops says how many (`extra.cxDropped`). An event carries the debug ids of the bundles its
 * stack names (debug-ids.ts) and the breadcrumbs recorded before it (breadcrumbs.ts; `breadcrumbs: false` records
 * none). With `sessions: true`, the page load is a session (sessions.ts) that an error marks errored, an unhandled one
 * crashed. This module alone is the errors-only build.
 */
export interface CaptureOptions {
  path?: string;
  extra?: Record<string, unknown>;
}

export interface ErrorsClient {
  captureException(err: unknown, opts?: CaptureOptions): void;
  captureMessage(text: unknown, opts?: CaptureOptions): void;
  flush(): Promise<void>;
  /** Errors dropped since the last one sent (the queue was full). */
  readonly dropped: number;
}

function errorEvent(name: unknown, message: unknown, stack: unknown, opts: CaptureOptions = {}): QueuedEvent {
  const e: QueuedEvent = {
    name: cut(name || 'Error', 200),
    message: cut(message, 2000) || '(no message)',
    stack: stack ? cut(stack, 8192) : undefined,
    path: cut(opts.path, 2048) || here(),
    timestamp: Date.now(),
    runtime: 'browser',
  };
  const debugIds = e.stack && safe(debugIdsOf)(e.stack as string);
  if (debugIds) e.debugIds = debugIds;
  const json = opts.extra && safe(JSON.stringify)(opts.extra);
  if (opts.extra) e.extra = json && json.length <= 16000 ? opts.extra : { cxExtraTooLarge: true };
  e.k = `${e.name}\n${e.message}\n${e.stack || ''}`;
  return e;
}

function ofError(err: unknown, opts?: CaptureOptions): QueuedEvent {
  if (err instanceof Error) return errorEvent(err.name, err.message, err.stack, opts);
  return errorEvent('Error', typeof err === 'string' ? err : safe(JSON.stringify)(err) || String(err), undefined, opts);
}

export interface ErrorsOptions {
  /** Capture window errors and unhandled rejections (default true). */
  captureGlobal?: boolean;
  /** Record console, clicks, navigation, fetch and XHR, and send the last 50 with each error (default true). */
  breadcrumbs?: boolean;
  /** One session per page load, for crash-free sessions per deploy (default false). */
  sessions?: boolean;
}

/**
 * What a build adds to the errors client: sessions and XMLHttpRequest breadcrumbs (the package's `init` and
 * `initErrors` add both; cx.js neither, to stay within its size budget).
 */
export interface ErrorsExtras {
  session?: typeof startSession;
  xhr?: typeof recordXhr;
}

export function createErrors(t: Transport, opts: ErrorsOptions = {}, more: ErrorsExtras = {}, did?: string): ErrorsClient {
  const queue = createQueue(t, 'errors/i', ERROR_BATCH_EVENTS, (e, n) => noteDropped(e, 'extra', 'cxDropped', n));
  const crumbs = opts.breadcrumbs !== false && safe(recordBreadcrumbs)(t.base, more.xhr);
  const session = more.session && opts.sessions && safe(more.session)(t, did);
  const report = (e: QueuedEvent, crashed?: boolean) => {
    if (crumbs) e.breadcrumbs = crumbs();
    if (session) session(crashed);
    queue.add(e);
  };
  const client: ErrorsClient = {
    captureException: safe((err: unknown, o?: CaptureOptions) => report(ofError(err, o))),
    captureMessage: safe((text: unknown, o?: CaptureOptions) => report(errorEvent('Message', text, undefined, o))),
    flush: queue.flush,
    get dropped() {
      return queue.dropped;
    },
  };
  if (opts.captureGlobal !== false && typeof addEventListener === 'function') {
    addEventListener(
      'error',
      safe((e: ErrorEvent) => {
        // A failed <script> or <img> is an Event without an error: not a script error.
        if (!e.error && !e.message) return;
        report(e.error ? ofError(e.error) : errorEvent('Error', e.message, e.filename ? `    at ${e.filename}:${e.lineno}:${e.colno}` : undefined), true);
      }),
    );
    addEventListener(
      'unhandledrejection',
      safe((e: PromiseRejectionEvent) => report(ofError(e.reason), true)),
    );
  }
  onLeave(queue.flush);
  return client;
}

/** Errors only (the smallest build): `initErrors({ baseUrl, ingestKey })`. */
export function initErrors(options: TransportOptions & ErrorsOptions = {}): ErrorsClient {
  return createErrors(createTransport(options), options, { session: startSession, xhr: recordXhr });
}
