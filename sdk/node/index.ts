/**
 * The Node SDK: report a server's errors to the service (`POST /v1/errors/i`, `runtime: "node"`).
 *
 *   import { init } from './sdk/node/index.ts';
 *   const errors = init();                       // SERVICE_INGEST_KEY, SERVICE_BASE_URL, SERVICE_DEPLOY_ID, SERVICE_GIT_SHA
 *   errors.captureException(err, { extra: { orderId } });
 *
 * - Events are queued and sent in batches: every 2 s, as soon as 10 are queued, and on flush(); each request
 *   at most 20 events and 64 KB (the edge's limits, §9).
 * - 429 and 503 back off for Retry-After (or 5 s) and the batch is sent again; other refusals drop it. A
 *   bounded queue drops the oldest events past `maxQueue` and counts them (`dropped`).
 * - `deployId` and `gitSha` default from SERVICE_DEPLOY_ID / SERVICE_GIT_SHA, which the platform's builds set,
 *   so the server stamps the environment (§7.4) with no configuration.
 * - With `captureUncaught` (the default), an uncaught exception or unhandled rejection is captured and flushed,
 *   then the process ends as Node would have: the error printed, exit code 1.
 * - Never throws into the application: a failing network is logged once per burst through `onError`.
 * No dependencies: Node 18+'s fetch.
 */
export interface NodeClientOptions {
  ingestKey?: string;
  /** The service's base URL, e.g. `https://service.example.com`. */
  baseUrl?: string;
  deployId?: string;
  gitSha?: string;
  flushIntervalMs?: number;
  /** Most events held while the service cannot take them; the oldest go first. */
  maxQueue?: number;
  captureUncaught?: boolean;
  /** For tests and custom transports. */
  fetch?: typeof fetch;
  onError?: (err: unknown) => void;
}

export interface CaptureContext {
  extra?: Record<string, unknown>;
  path?: string;
  userId?: string;
}

export interface NodeClient {
  captureException(err: unknown, ctx?: CaptureContext): void;
  captureMessage(message: string, ctx?: CaptureContext): void;
  /** Send everything queued; resolves true when the queue is empty (never rejects). */
  flush(timeoutMs?: number): Promise<boolean>;
  /** Events dropped because the queue was full or the service refused them for good. */
  readonly dropped: number;
  close(): Promise<void>;
}

const MAX_EVENTS = 20;
const MAX_BYTES = 64 * 1024;
const SEND_AT = 10;
const DEFAULT_RETRY_SEC = 5;

interface WireEvent {
  name: string;
  message: string;
  stack?: string;
  runtime: 'node';
  timestamp: number;
  deployId?: string;
  gitSha?: string;
  path?: string;
  userId?: string;
  extra?: Record<string, unknown>;
}

export function init(options: NodeClientOptions = {}): NodeClient {
  const env = process.env;
  const ingestKey = options.ingestKey ?? env.SERVICE_INGEST_KEY ?? '';
  const baseUrl = (options.baseUrl ?? env.SERVICE_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
  const deployId = options.deployId ?? env.SERVICE_DEPLOY_ID;
  const gitSha = options.gitSha ?? env.SERVICE_GIT_SHA;
  const maxQueue = options.maxQueue ?? 200;
  const doFetch = options.fetch ?? globalThis.fetch;
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`[service sdk] could not send errors: ${(err as Error)?.message ?? err}\n`));
  const queue: WireEvent[] = [];
  let dropped = 0;
  let sending: Promise<void> | undefined;
  let blockedUntil = 0;
  let closed = false;

  const timer = setInterval(() => void send(), options.flushIntervalMs ?? 2_000);
  timer.unref();

  function enqueue(e: WireEvent): void {
    if (closed) return;
    queue.push(e);
    while (queue.length > maxQueue) {
      queue.shift();
      dropped++;
    }
    if (queue.length >= SEND_AT) void send();
  }

  function base(name: string, message: string, ctx: CaptureContext = {}): WireEvent {
    const e: WireEvent = { name, message, runtime: 'node', timestamp: Date.now() };
    if (deployId) e.deployId = deployId;
    if (gitSha) e.gitSha = gitSha;
    if (ctx.path) e.path = ctx.path;
    if (ctx.userId) e.userId = ctx.userId;
    if (ctx.extra) e.extra = ctx.extra;
    return e;
  }

  /** The next request: up to MAX_EVENTS events and MAX_BYTES of body, taken from the front of the queue. */
  function nextBatch(): { events: WireEvent[]; body: string } | undefined {
    const events: WireEvent[] = [];
    let body = '';
    while (queue.length && events.length < MAX_EVENTS) {
      const candidate = JSON.stringify({ batch: [...events, queue[0]!] });
      if (Buffer.byteLength(candidate) > MAX_BYTES) {
        if (!events.length) {
          // One event alone over the limit: it can never be sent.
          queue.shift();
          dropped++;
          continue;
        }
        break;
      }
      events.push(queue.shift()!);
      body = candidate;
    }
    return events.length ? { events, body } : undefined;
  }

  function send(): Promise<void> {
    if (sending) return sending;
    sending = (async () => {
      try {
        while (queue.length && Date.now() >= blockedUntil) {
          const batch = nextBatch();
          if (!batch) break;
          let res: Response;
          try {
            res = await doFetch(`${baseUrl}/v1/errors/i`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ingestKey}` }, body: batch.body });
          } catch (err) {
            // Network trouble: keep the batch for the next try.
            queue.unshift(...batch.events);
            blockedUntil = Date.now() + 1_000;
            onError(err);
            break;
          }
          await res.arrayBuffer().catch(() => undefined);
          if (res.status === 429 || res.status === 503) {
            queue.unshift(...batch.events);
            const retry = Number(res.headers.get('retry-after'));
            blockedUntil = Date.now() + (Number.isFinite(retry) && retry > 0 ? retry : DEFAULT_RETRY_SEC) * 1000;
            break;
          }
          if (res.status >= 400) {
            // Refused for good (a bad key, a capped project): these events will never be taken.
            dropped += batch.events.length;
            onError(new Error(`the service answered ${res.status}`));
          }
        }
      } finally {
        sending = undefined;
      }
    })();
    return sending;
  }

  async function flush(timeoutMs = 5_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (queue.length && Date.now() < deadline) {
      if (Date.now() < blockedUntil) await new Promise((r) => setTimeout(r, Math.min(blockedUntil - Date.now(), deadline - Date.now())));
      await send().catch(() => undefined);
      if (queue.length && Date.now() < blockedUntil) continue;
      if (queue.length) await new Promise((r) => setTimeout(r, 50));
    }
    await sending;
    return queue.length === 0;
  }

  const client: NodeClient = {
    captureException(err, ctx) {
      try {
        const e = err instanceof Error ? err : new Error(typeof err === 'string' ? err : safeJson(err));
        const ev = base(e.name || 'Error', e.message, ctx);
        if (e.stack) ev.stack = e.stack;
        enqueue(ev);
      } catch {
        // never into the application
      }
    },
    captureMessage(message, ctx) {
      try {
        enqueue(base('Message', String(message), ctx));
      } catch {
        // never into the application
      }
    },
    flush,
    get dropped() {
      return dropped;
    },
    async close() {
      clearInterval(timer);
      await flush();
      closed = true;
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
    },
  };

  /** Capture, flush, then end as Node does for an uncaught error: print it, exit code 1. */
  const onUncaught = (err: unknown) => {
    client.captureException(err, { extra: { mechanism: 'uncaught' } });
    void flush(2_000).finally(() => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    });
  };
  if (options.captureUncaught ?? true) {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
  }
  return client;
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
