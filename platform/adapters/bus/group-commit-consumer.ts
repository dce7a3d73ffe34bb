import type { Logger } from '../../logger.ts';
import type { BatchHandler, ConsumedMessage } from '../../ports/bus.ts';

/**
 * Group commit on the consuming side: what the Kafka adapter's fetches bring in, from every partition
 * and fetch cycle, waits here while the handler works on the previous batch, and goes to the handler
 * together as the next one. Offsets are committed only after the handler resolved for every message up
 * to them.
 *
 * Why: a handler's cost is mostly per call (a Postgres transaction, a ClickHouse insert), and a fetch
 * may bring few messages (librdkafka's mock answers with one message set per partition). Handing the
 * handler whatever arrived while it was busy makes its batches as large as the load, and no larger:
 * at low load every fetch is handled at once; under load the batches grow to `maxBatchBytes`.
 *
 * Guarantees kept from one-call-per-fetch:
 *  - order within a partition (messages are appended in fetch order; with the default of one batch in
 *    flight, batches run one at a time; with `maxInFlight` above 1 only the commits keep the order);
 *  - at least once: a failed batch is retried in place with backoff, nothing after it is committed,
 *    and when the subscription stops with a batch still failing, it is left uncommitted for the next
 *    member of the group;
 *  - bounded memory: `add` waits (heartbeating) while more than twice `maxBatchBytes` is pending.
 */
export interface PartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read, as Kafka commits it. */
  offset: string;
}

export interface GroupCommitConsumerOptions {
  handler: BatchHandler;
  /** Commit what the handler finished; a failure is logged (the messages come again and handlers are idempotent). */
  commit: (offsets: PartitionOffset[]) => Promise<void>;
  /** A batch handed to the handler holds at most this many value bytes (and at least one message). */
  maxBatchBytes: number;
  /**
   * Batches the handler works on at once (default 1). With more than one, a batch's database waits
   * overlap the next one's CPU work; offsets are still committed in order, each only once every
   * batch before it succeeded. Effects must then not depend on the order of batches (the error
   * pipeline's counts are increments, its rows keyed by event id, its locks taken in id order).
   */
  maxInFlight?: number;
  /**
   * How long a batch short of maxBatchBytes waits for more before the handler gets it (default 0: at once); see
   * SubscribeOptions.lingerMs. Offsets are still committed only after the handler, so nothing is lost by waiting.
   */
  lingerMs?: number;
  /**
   * Whether this member still owns a partition (default: always). After a rebalance moved a partition
   * away, a batch that held its messages may finish after the new owner committed further; committing
   * it then would move the group's offset back (and replay what the new owner handled). Skipped.
   */
  owns?: (topic: string, partition: number) => boolean;
  retry: { initialMs: number; maxMs: number };
  log: Logger;
}

export class GroupCommitConsumer {
  private pending: ConsumedMessage[] = [];
  private pendingBytes = 0;
  /** Batches handed to the handler, oldest first; removed (and committed) in this order once done. */
  private readonly inFlight: Array<{ batch: ConsumedMessage[]; done: boolean }> = [];
  /** Commits run one after another, in batch order. */
  private committing: Promise<void> = Promise.resolve();
  private idleWaiters: Array<() => void> = [];
  /** Batches the handler is working on now (in inFlight and not done). */
  private running = 0;
  private stopping = false;
  /** Set by drain(): what is pending is still handled, but a failing batch is no longer retried. */
  private draining = false;
  /** Highest offset committed per topic/partition, so a re-fetched older message never moves it back. */
  private readonly committed = new Map<string, bigint>();
  private readonly roomWaiters = new Set<() => void>();
  /** When the oldest pending message arrived (performance.now()), for the linger. */
  private pendingSince = 0;
  private lingerTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: GroupCommitConsumerOptions) {}

  /**
   * Queue a fetched batch. Resolves at once while there is room, else once the handler took enough;
   * `heartbeat` is called every second meanwhile, so the group does not think this member died.
   */
  async add(messages: ConsumedMessage[], heartbeat: () => Promise<void>): Promise<void> {
    if (this.stopping || !messages.length) return;
    if (!this.pending.length) this.pendingSince = performance.now();
    this.pending.push(...messages);
    for (const m of messages) this.pendingBytes += m.value.length;
    this.start();
    while (this.pendingBytes > 2 * this.opts.maxBatchBytes && !this.stopping) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.roomWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, 1_000);
        this.roomWaiters.add(done);
      });
      await heartbeat().catch(() => undefined);
    }
  }

  /**
   * Handle what is pending (a failing batch is tried once more, not retried), then stop taking
   * messages. Call it while the consumer can still commit, after pausing its fetches.
   */
  async drain(): Promise<void> {
    this.draining = true;
    // A lingering batch goes now (draining ends every linger).
    this.start();
    while (this.inFlight.length || this.running) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.committing;
    this.stopping = true;
    clearTimeout(this.lingerTimer);
    this.pending = [];
    this.pendingBytes = 0;
    this.wakeWaiters();
  }

  private start(): void {
    const max = this.opts.maxInFlight ?? 1;
    // Finished batches wait in inFlight for an earlier one to finish too; at most `max` more than
    // run, so a batch that keeps failing does not let finished-but-uncommitted ones pile up.
    while (this.running < max && this.inFlight.length < 2 * max && this.pending.length && !this.stopping && !this.lingers()) {
      const entry = { batch: this.take(), done: false };
      this.inFlight.push(entry);
      this.running++;
      this.wakeWaiters();
      void this.handleWithRetry(entry.batch).then((ok) => {
        this.running--;
        if (!ok) {
          // Stopping with the batch still failing: leave it and everything after it uncommitted.
          this.stopping = true;
          const at = this.inFlight.indexOf(entry);
          if (at >= 0) this.inFlight.splice(at);
        } else {
          entry.done = true;
          const finished: ConsumedMessage[][] = [];
          while (this.inFlight[0]?.done) finished.push(this.inFlight.shift()!.batch);
          if (finished.length) this.committing = this.committing.then(() => this.commitAfter(finished.flat()));
        }
        void this.committing.then(() => {
          if (!this.inFlight.length && !this.running) for (const wake of this.idleWaiters.splice(0)) wake();
        });
        this.start();
      });
    }
  }

  /** Whether the pending messages, short of a full batch, wait for more (lingerMs; a timer starts them). */
  private lingers(): boolean {
    const linger = this.opts.lingerMs ?? 0;
    if (!linger || this.draining || this.pendingBytes >= this.opts.maxBatchBytes) return false;
    const left = this.pendingSince + linger - performance.now();
    if (left <= 0) return false;
    this.lingerTimer ??= setTimeout(() => {
      this.lingerTimer = undefined;
      this.start();
    }, Math.ceil(left));
    return true;
  }

  /** The oldest pending messages, up to maxBatchBytes (at least one). */
  private take(): ConsumedMessage[] {
    let bytes = 0;
    let n = 0;
    while (n < this.pending.length) {
      const size = this.pending[n]!.value.length;
      if (n > 0 && bytes + size > this.opts.maxBatchBytes) break;
      bytes += size;
      n++;
    }
    this.pendingBytes -= bytes;
    return this.pending.splice(0, n);
  }

  private async handleWithRetry(batch: ConsumedMessage[]): Promise<boolean> {
    let delay = this.opts.retry.initialMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.opts.handler(batch);
        return true;
      } catch (err) {
        const first = batch[0]!;
        this.opts.log.error(
          { err, topic: first.topic, partition: first.partition, firstOffset: first.offset, messages: batch.length, attempt },
          'handler failed; batch not committed, retrying',
        );
        if (this.draining) return false;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, this.opts.retry.maxMs);
        if (this.draining) return false;
      }
    }
  }

  private async commitAfter(batch: ConsumedMessage[]): Promise<void> {
    const next = new Map<string, PartitionOffset>();
    const owns = this.opts.owns ?? (() => true);
    for (const m of batch) {
      if (!owns(m.topic, m.partition)) continue;
      const key = `${m.partition}\u0000${m.topic}`;
      const offset = BigInt(m.offset) + 1n;
      if (offset <= (this.committed.get(key) ?? -1n)) continue;
      const seen = next.get(key);
      if (!seen || BigInt(seen.offset) < offset) next.set(key, { topic: m.topic, partition: m.partition, offset: offset.toString() });
    }
    if (!next.size) return;
    try {
      await this.opts.commit([...next.values()]);
      for (const [key, p] of next) this.committed.set(key, BigInt(p.offset));
    } catch (err) {
      this.opts.log.warn({ err, offsets: [...next.values()] }, 'offset commit failed; these messages may be delivered again');
    }
  }

  private wakeWaiters(): void {
    for (const wake of [...this.roomWaiters]) wake();
  }
}
