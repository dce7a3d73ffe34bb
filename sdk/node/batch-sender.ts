/**
 * The Node SDK's batching sender, one per ingest route (errors, analytics): a bounded queue sent in batches every
 * `flushIntervalMs`, as soon as `sendAt` are queued, and on flush(); each request at most `maxEvents` events and
 * `maxBytes` of body. 429 and 503 back off for Retry-After (or 5 s) and the batch is sent again; network trouble keeps
 * it for the next try; any other refusal drops it (counted). Never throws.
 */
export interface BatchSenderOptions {
  url: string;
  ingestKey: string;
  maxEvents: number;
  maxBytes: number;
  sendAt: number;
  maxQueue: number;
  flushIntervalMs: number;
  fetch: typeof fetch;
  onError(err: unknown): void;
}

export interface BatchSender<E> {
  enqueue(e: E): void;
  flush(timeoutMs?: number): Promise<boolean>;
  readonly dropped: number;
  close(): Promise<void>;
}

const DEFAULT_RETRY_SEC = 5;

export function createBatchSender<E>(o: BatchSenderOptions): BatchSender<E> {
  const queue: E[] = [];
  let dropped = 0;
  let sending: Promise<void> | undefined;
  let blockedUntil = 0;
  let closed = false;
  const timer = setInterval(() => void send(), o.flushIntervalMs);
  timer.unref();

  /** The next request: up to maxEvents events and maxBytes of body, taken from the front of the queue. */
  function nextBatch(): { events: E[]; body: string } | undefined {
    const events: E[] = [];
    let body = '';
    while (queue.length && events.length < o.maxEvents) {
      const candidate = JSON.stringify({ batch: [...events, queue[0]!] });
      if (Buffer.byteLength(candidate) > o.maxBytes) {
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
    if (sending !== undefined) return sending;
    // Nothing to send, or waiting out a Retry-After: no run at all. (A run that ended before its first await would
    // otherwise be left behind as `sending`, and every later send would return it without sending: a timer tick
    // during a Retry-After window stalled the sender for good.)
    if (!queue.length || Date.now() < blockedUntil) return Promise.resolve();
    const run = (async () => {
      while (queue.length && Date.now() >= blockedUntil) {
        const batch = nextBatch();
        if (!batch) break;
        let res: Response;
        try {
          res = await o.fetch(o.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${o.ingestKey}` },
            body: batch.body,
          });
        } catch (err) {
          // Network trouble: keep the batch for the next try.
          queue.unshift(...batch.events);
          blockedUntil = Date.now() + 1_000;
          o.onError(err);
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
          o.onError(new Error(`the service answered ${res.status}`));
        }
      }
    })();
    sending = run;
    run
      .finally(() => {
        if (sending === run) sending = undefined;
      })
      .catch(() => undefined);
    return run;
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

  return {
    enqueue(e) {
      if (closed) return;
      queue.push(e);
      while (queue.length > o.maxQueue) {
        queue.shift();
        dropped++;
      }
      if (queue.length >= o.sendAt) void send();
    },
    flush,
    get dropped() {
      return dropped;
    },
    async close() {
      clearInterval(timer);
      await flush();
      closed = true;
    },
  };
}
