import { debugIdsOf } from './debug-ids.ts';
import { createQueue, createTransport, cut, noteDropped, onLeave, safe, type QueuedEvent, type Transport, type TransportOptions } from './transport.ts';
import { WIRE_LIMITS } from './wire.ts';

/**
 * Browser errors (spec §7.1): window `error` events and unhandled rejections are captured (with `captureGlobal`, the
 * default); `captureException(err, { path, extra })`, `captureMessage(text, { extra })`, `flush()`. Events are
 * queued and sent as transport.ts says; an error repeated while queued is sent once with `extra.cxRepeats`, and the
 * next error sent after drops says how many (`extra.cxDropped`). An event carries the debug ids of the bundles its
 * stack names (debug-ids.ts). This module alone is the errors-only build.
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

const here = () => (typeof location === 'undefined' ? '' : cut(location.pathname, 2048));

function errorEvent(name: unknown, message: unknown, stack: unknown, opts: CaptureOptions = {}): QueuedEvent {
  const e: QueuedEvent = {
    name: cut(name || 'Error', 200),
    message: cut(message, 2000) || '(no message)',
    stack: stack ? cut(stack, 8192) : undefined,
    path: opts.path ? cut(opts.path, 2048) : here(),
    timestamp: Date.now(),
    runtime: 'browser',
  };
  const debugIds = e.stack && safe(debugIdsOf)(e.stack as string);
  if (debugIds) e.debugIds = debugIds;
  if (opts.extra && (safe(JSON.stringify)(opts.extra)?.length ?? 1e9) <= 16000) e.extra = opts.extra;
  else if (opts.extra) e.extra = { cxExtraTooLarge: true };
  e.k = `${e.name}\n${e.message}\n${e.stack || ''}`;
  return e;
}

function ofError(err: unknown, opts?: CaptureOptions): QueuedEvent {
  if (err instanceof Error) return errorEvent(err.name, err.message, err.stack, opts);
  return errorEvent('Error', typeof err === 'string' ? err : (safe(JSON.stringify)(err) ?? String(err)), undefined, opts);
}

export function createErrors(t: Transport, opts: { captureGlobal?: boolean } = {}): ErrorsClient {
  const queue = createQueue(t, 'errors/i', WIRE_LIMITS.errorBatch.maxEvents, (e, n) => noteDropped(e, 'extra', 'cxDropped', n));
  const client: ErrorsClient = {
    captureException: (err, o) => void safe(() => queue.add(ofError(err, o)))(),
    captureMessage: (text, o) => void safe(() => queue.add(errorEvent('Message', text, undefined, o)))(),
    flush: () => safe(queue.flush)() ?? Promise.resolve(),
    get dropped() {
      return queue.dropped;
    },
  };
  if ((opts.captureGlobal ?? true) && typeof addEventListener === 'function') {
    addEventListener(
      'error',
      safe((e: ErrorEvent) => {
        // A failed <script> or <img> is an Event without an error: not a script error.
        if (!e.error && !e.message) return;
        queue.add(e.error ? ofError(e.error) : errorEvent('Error', e.message, e.filename ? `    at ${e.filename}:${e.lineno}:${e.colno}` : undefined));
      }),
    );
    addEventListener(
      'unhandledrejection',
      safe((e: PromiseRejectionEvent) => queue.add(ofError(e.reason))),
    );
  }
  onLeave(() => void queue.flush());
  return client;
}

/** Errors only (the smallest build): `initErrors({ baseUrl, ingestKey })`. */
export function initErrors(options: TransportOptions & { captureGlobal?: boolean } = {}): ErrorsClient {
  return createErrors(createTransport(options), options);
}
