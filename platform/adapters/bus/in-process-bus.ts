import { cp, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../logger.ts';
import {
  BusUnavailableError,
  type BatchHandler,
  type Bus,
  type BusLag,
  type BusMessage,
  type ConsumedMessage,
  type SubscribeOptions,
  type Subscription,
} from '../../ports/bus.ts';
import { openTopicLog, topicLogDir, type TopicLog } from './local-log.ts';

/**
 * In-process bus: the embedded default, one process running every role, with each topic's log on disk (DATA_DIR/bus,
 * local-log.ts). Publish resolves once the messages are written and synced to the topic's log, as Kafka acks once
 * its replicas hold them; consumers run behind. A handler that fails is retried, with backoff, until it succeeds (its
 * messages are safe on disk), and a group's progress is committed to the log after each batch, so a restart resumes
 * after the last commit and re-delivers at most what was in flight (handlers are idempotent).
 *
 * - One partition per topic (0), offsets count up from 0 per topic across restarts, so order is publish order.
 * - A group runs up to its subscription's `maxInFlight` batches at once (default 1: its handler never runs twice at
 *   once); commits stay in offset order. Waiting messages are handed to the handler together (up to MAX_BATCH
 *   messages and MAX_BATCH_BYTES) to keep the embedded hot path cheap, and with a `lingerMs` a batch short of that
 *   waits up to lingerMs for more (lingers()).
 * - A group outlives its subscription: while a group has no active member (stopped, restarting), messages for it
 *   wait. A topic with no group yet keeps its messages in its log; a group that never committed starts at the oldest
 *   message on disk. A group's first subscription in a process reads back what it has not committed (in chunks,
 *   local-log.ts); what is published meanwhile waits behind it.
 * - Waiting messages are bounded (MAX_WAITING messages and MAX_WAITING_BYTES per group or topic): beyond that,
 *   publish rejects at once rather than growing memory.
 * - A group with several members delivers to one of them at a time (the first still active).
 * - drained() resolves once every group with a member has committed up to its log's end at the call: the way to
 *   wait until what was published is processed (tests), since publish resolves before that.
 */

export interface InProcessBusOptions {
  /** Where the topics' logs live (DATA_DIR/bus). */
  logDir: string;
  /** Handler failures (retried) and log trouble are reported here. */
  logger?: Logger;
  /** Where a log segment rolls (local-log.ts's SEGMENT_BYTES); tests make it small. */
  segmentBytes?: number;
  /** Bytes of message values that may wait per group or topic (MAX_WAITING_BYTES); tests make it small. */
  maxWaitingBytes?: number;
}

const HANDLER_RETRY_MS = 20;
/** The longest wait between two attempts of a failing handler. */
const HANDLER_RETRY_MAX_MS = 5_000;
const MAX_BATCH = 1_000;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_WAITING = 100_000;
const MAX_WAITING_BYTES = 256 * 1024 * 1024;

interface Job {
  messages: ConsumedMessage[];
  bytes: number;
  /** When it was published (performance.now()); a read-back or given-back job has none and never lingers. */
  at?: number;
  /** A batch given back unprocessed (its member left): it runs again alone, in its old place in the commit order. */
  run?: Run;
}

/** A batch handed to the handler, not yet committed. Commits advance over the finished prefix. */
interface Run {
  end: bigint;
  finished: boolean;
}

/** A drained() call waiting for a group to commit up to `end`. */
interface Waiter {
  end: bigint;
  resolve(): void;
  reject(err: Error): void;
}

interface Group {
  id: string;
  topic: Topic;
  members: BatchHandler[];
  queue: Job[];
  waiting: number;
  waitingBytes: number;
  /** Batches the handler may work on at once (the first subscription's maxInFlight). */
  maxInFlight: number;
  /** How long a small batch waits for more before it is handed over (the first subscription's lingerMs; 0: never). */
  lingerMs: number;
  /** The wake-up of a lingering batch. */
  lingerTimer?: NodeJS.Timeout;
  running: number;
  /** The batches in flight; stop() waits on them. */
  inFlight: Set<Promise<void>>;
  /** The batches handed out and not yet committed, in offset order. */
  runs: Run[];
  /** The first offset publish hands this group; those before it are read back from the log. */
  liveFrom: bigint;
  /** While the read-back runs: what was published meanwhile, queued behind it once it is done. */
  held?: Job[];
  /** Settles when the read-back is queued (rejects if the log could not be read). */
  ready: Promise<void>;
  waiters: Waiter[];
}

interface Topic {
  name: string;
  log: TopicLog;
  groups: Map<string, Group>;
  /** Published before any group existed: counted for the bound; the first group reads them back from the log. */
  orphanCount: number;
  orphanBytes: number;
}

const bytesOf = (messages: { value: Buffer }[]) => messages.reduce((n, m) => n + m.value.length, 0);
const GIVEN_BACK = Symbol('given back');

export function createInProcessBus(opts: InProcessBusOptions): Bus {
  const topics = new Map<string, Topic>();
  /** Topics whose logs are being opened (read through, local-log.ts): their first users wait on the same open. */
  const opening = new Map<string, Promise<Topic>>();
  const logger = opts.logger;
  const maxWaitingBytes = opts.maxWaitingBytes ?? MAX_WAITING_BYTES;
  let closed = false;

  function openTopic(name: string): Promise<Topic> {
    let p = opening.get(name);
    if (!p) {
      const onError = (err: unknown, what: string) => logger?.error({ err, topic: name }, `bus log: ${what} failed`);
      p = (async () => {
        let log: TopicLog;
        try {
          log = await openTopicLog(topicLogDir(opts.logDir, name), onError, opts.segmentBytes);
        } catch (err) {
          throw new BusUnavailableError(`in-process bus: cannot open the log of ${name}: ${(err as Error).message}`, { cause: err });
        } finally {
          opening.delete(name);
        }
        if (closed) {
          await log.close();
          throw new BusUnavailableError('bus closed');
        }
        const t: Topic = { name, log, groups: new Map(), orphanCount: 0, orphanBytes: 0 };
        topics.set(name, t);
        return t;
      })();
      opening.set(name, p);
    }
    return p;
  }

  const addWaiting = (group: Group, job: Job, sign: 1 | -1) => {
    group.waiting += sign * job.messages.length;
    group.waitingBytes += sign * job.bytes;
  };

  function enqueue(group: Group, job: Job, front = false): void {
    if (front) group.queue.unshift(job);
    else group.queue.push(job);
    addWaiting(group, job, 1);
    drain(group);
  }

  /** A published batch for the group: queued, or held behind the read-back while it runs. */
  function deliver(group: Group, job: Job): void {
    if (!group.held) return enqueue(group, job);
    group.held.push(job);
    addWaiting(group, job, 1);
  }

  function drain(group: Group): void {
    while (group.running < group.maxInFlight && group.members.length && group.queue.length && !lingers(group)) startBatch(group);
  }

  /**
   * Linger (SubscribeOptions.lingerMs): a batch smaller than the largest a handler takes waits until its oldest message
   * is lingerMs old, so a trickle of publishes reaches the handler as one call (one database write) per lingerMs
   * rather than one each. Never when a drained() call waits on the group, for a batch given back or read back from
   * the log, or once the batch is full. Publish is not delayed: its messages are in the log already.
   */
  function lingers(group: Group): boolean {
    const first = group.queue[0]!;
    if (!group.lingerMs || first.at === undefined || group.waiters.length) return false;
    if (group.waiting >= MAX_BATCH || group.waitingBytes >= MAX_BATCH_BYTES) return false;
    const left = first.at + group.lingerMs - performance.now();
    if (left <= 0) return false;
    group.lingerTimer ??= setTimeout(() => {
      group.lingerTimer = undefined;
      drain(group);
    }, Math.ceil(left));
    return true;
  }

  /** Hand the next waiting messages (up to MAX_BATCH and MAX_BATCH_BYTES) to the group's first member. */
  function startBatch(group: Group): void {
    const jobs: Job[] = [group.queue.shift()!];
    let count = jobs[0]!.messages.length;
    let bytes = jobs[0]!.bytes;
    while (!jobs[0]!.run && group.queue.length && !group.queue[0]!.run) {
      const next = group.queue[0]!;
      if (count + next.messages.length > MAX_BATCH || bytes + next.bytes > MAX_BATCH_BYTES) break;
      jobs.push(group.queue.shift()!);
      count += next.messages.length;
      bytes += next.bytes;
    }
    group.waiting -= count;
    group.waitingBytes -= bytes;
    const messages = jobs.length === 1 ? jobs[0]!.messages : jobs.flatMap((j) => j.messages);
    let run = jobs[0]!.run;
    if (!run) {
      run = { end: BigInt(messages[messages.length - 1]!.offset) + 1n, finished: false };
      group.runs.push(run);
    }
    const taken = run;
    group.running++;
    const settled: Promise<void> = runUntilDone(group, messages).then((outcome) => {
      group.running--;
      group.inFlight.delete(settled);
      if (outcome === GIVEN_BACK) enqueue(group, { messages, bytes, run: taken }, true);
      else {
        taken.finished = true;
        commitFinished(group);
      }
      drain(group);
    });
    group.inFlight.add(settled);
  }

  /** Commit past every finished batch up to the first one still running; answer the drained() calls it satisfies. */
  function commitFinished(group: Group): void {
    let end: bigint | undefined;
    while (group.runs.length && group.runs[0]!.finished) end = group.runs.shift()!.end;
    if (end === undefined) return;
    group.topic.log.commit(group.id, end);
    if (!group.waiters.length) return;
    const past = end;
    const [done, left] = partition(group.waiters, (w) => w.end <= past);
    group.waiters = left;
    for (const w of done) w.resolve();
  }

  /**
   * Run the batch on the group's first member, retrying with backoff until it succeeds. When no member is left (all
   * stopped) or the bus closes, the batch is given back uncommitted: the next member runs it, or the next start
   * reads it back from the log.
   */
  async function runUntilDone(group: Group, messages: ConsumedMessage[]): Promise<undefined | typeof GIVEN_BACK> {
    for (let attempt = 1; ; attempt++) {
      const handler = group.members[0];
      if (closed || !handler) return GIVEN_BACK;
      try {
        await handler(messages);
        return undefined;
      } catch (err) {
        logger?.warn({ err, topic: group.topic.name, group: group.id, attempt, messages: messages.length }, 'bus handler failed; retrying');
      }
      await new Promise((r) => setTimeout(r, Math.min(HANDLER_RETRY_MAX_MS, HANDLER_RETRY_MS * 2 ** attempt)));
    }
  }

  function refuseIfFull(topic: Topic, count: number, bytes: number): void {
    const over = (waiting: number, waitingBytes: number) => waiting + count > MAX_WAITING || waitingBytes + bytes > maxWaitingBytes;
    let full = !topic.groups.size && over(topic.orphanCount, topic.orphanBytes);
    for (const g of topic.groups.values()) full ||= over(g.waiting, g.waitingBytes);
    if (full) throw new BusUnavailableError(`in-process bus: too many messages waiting on ${topic.name}`);
  }

  /** Messages as a consumer sees them, numbered from `first` on (or by their own offsets, read back from the log). */
  function consumed(topic: string, messages: Array<BusMessage & { offset?: bigint }>, first = 0n): ConsumedMessage[] {
    return messages.map((m, i) => ({ topic, partition: 0, offset: (m.offset ?? first + BigInt(i)).toString(), key: m.key, value: m.value }));
  }

  async function publish(topicName: string, messages: BusMessage[]): Promise<void> {
    if (closed) throw new BusUnavailableError('bus closed');
    if (!messages.length) return;
    const topic = topics.get(topicName) ?? (await openTopic(topicName));
    const bytes = bytesOf(messages);
    refuseIfFull(topic, messages.length, bytes);
    let first: bigint;
    try {
      first = await topic.log.append(messages);
    } catch (err) {
      throw new BusUnavailableError(`in-process bus: cannot write the log of ${topicName}: ${(err as Error).message}`, { cause: err });
    }
    const batch = consumed(topicName, messages, first);
    // A group that started after the append was written reads it back from the log instead.
    const at = performance.now();
    for (const g of topic.groups.values()) if (first >= g.liveFrom) deliver(g, { messages: batch, bytes, at });
    if (!topic.groups.size) {
      topic.orphanCount += batch.length;
      topic.orphanBytes += bytes;
    }
  }

  /**
   * A group's first member in this process: it reads back from the log what the group has not committed (a group that
   * never committed, from the oldest message on disk), in chunks, queued as they come; what is published meanwhile
   * is held behind the read-back.
   */
  function createGroup(topic: Topic, groupId: string, maxInFlight: number, lingerMs: number): Group {
    const log = topic.log;
    const committed = log.committed(groupId);
    const from = committed ?? log.startOffset;
    // A group that never committed says where it starts, so retention keeps what it still has to read.
    if (committed === undefined) log.commit(groupId, from);
    const group: Group = {
      id: groupId,
      topic,
      members: [],
      queue: [],
      waiting: 0,
      waitingBytes: 0,
      maxInFlight,
      lingerMs,
      running: 0,
      inFlight: new Set(),
      runs: [],
      liveFrom: log.nextOffset,
      held: [],
      ready: Promise.resolve(),
      waiters: [],
    };
    topic.groups.set(groupId, group);
    topic.orphanCount = 0;
    topic.orphanBytes = 0;
    // readFrom takes what it reads (up to liveFrom, the log's end now) in this call, before it awaits anything.
    const reading = log.readFrom(from, (records) => {
      for (let i = 0; i < records.length; i += MAX_BATCH) {
        const slice = consumed(topic.name, records.slice(i, i + MAX_BATCH));
        enqueue(group, { messages: slice, bytes: bytesOf(slice) });
      }
    });
    group.ready = reading.then(
      () => {
        const held = group.held!;
        group.held = undefined;
        for (const job of held) group.queue.push(job);
        drain(group);
      },
      (err: Error) => {
        // Past a record it could not read, the group must not commit: it stops here, and a new subscription reads again.
        group.members = [];
        topic.groups.delete(groupId);
        throw new BusUnavailableError(`in-process bus: cannot read the log of ${topic.name} for ${groupId}: ${err.message}`, { cause: err });
      },
    );
    group.ready.catch(() => undefined);
    return group;
  }

  async function subscribe(topicName: string, groupId: string, handler: BatchHandler, subscribeOpts?: SubscribeOptions): Promise<Subscription> {
    if (closed) throw new BusUnavailableError('bus closed');
    const topic = topics.get(topicName) ?? (await openTopic(topicName));
    const g = topic.groups.get(groupId) ?? createGroup(topic, groupId, Math.max(1, subscribeOpts?.maxInFlight ?? 1), Math.max(0, subscribeOpts?.lingerMs ?? 0));
    g.members.push(handler);
    drain(g);
    await g.ready;
    let stopped = false;
    return {
      async stop() {
        if (stopped) return;
        stopped = true;
        const i = g.members.indexOf(handler);
        if (i >= 0) g.members.splice(i, 1);
        await Promise.all(g.inFlight);
        if (!g.members.length) {
          const err = new Error(`bus consumer group ${g.id} of ${topicName} stopped before it caught up`);
          for (const w of g.waiters.splice(0)) w.reject(err);
        }
      },
    };
  }

  return {
    adapter: 'in-process',
    publish,
    subscribe,
    async drained() {
      if (closed) throw new BusUnavailableError('bus closed');
      // Taken in this call, before any await. A topic still opening has no group yet, nor anything published.
      const waits: Promise<void>[] = [];
      for (const topic of topics.values()) {
        const end = topic.log.nextOffset;
        for (const g of topic.groups.values()) {
          if (!g.members.length || (topic.log.committed(g.id) ?? topic.log.startOffset) >= end) continue;
          waits.push(new Promise<void>((resolve, reject) => g.waiters.push({ end, resolve, reject })));
          // Someone waits for this group: a lingering batch goes now.
          drain(g);
        }
      }
      await Promise.all(waits);
      return waits.length > 0;
    },
    /** A copy of the logs for a backup. The open topics' logs are taken in one turn (local-log.ts), the rest copied. */
    async snapshot(dest) {
      const logDir = opts.logDir;
      await Promise.allSettled(opening.values());
      const names = await readdir(logDir).catch(() => [] as string[]);
      const open = new Map<string, TopicLog>();
      for (const t of topics.values()) open.set(path.basename(topicLogDir(logDir, t.name)), t.log);
      const taking = names.map((n) => open.get(n)?.snapshot(path.join(dest, n)));
      await Promise.all(taking);
      await mkdir(dest, { recursive: true });
      // A topic no one here opened: nothing writes it while this process holds the data directory.
      for (const [i, n] of names.entries()) {
        if (!taking[i]) await cp(path.join(logDir, n), path.join(dest, n), { recursive: true, verbatimSymlinks: true, filter: (src) => !src.endsWith('.tmp') });
      }
    },
    /** Per group: the log's end minus the group's commit. */
    async lag() {
      const out: BusLag[] = [];
      for (const topic of topics.values()) {
        for (const g of topic.groups.values()) {
          const messages = Number(topic.log.nextOffset - (topic.log.committed(g.id) ?? topic.log.startOffset));
          out.push({ topic: topic.name, group: g.id, messages });
        }
      }
      return out;
    },
    async close() {
      closed = true;
      await Promise.allSettled(opening.values());
      const err = new BusUnavailableError('bus closed');
      for (const topic of topics.values()) {
        for (const group of topic.groups.values()) {
          clearTimeout(group.lingerTimer);
          group.members = [];
          await Promise.all(group.inFlight);
          group.queue = [];
          for (const w of group.waiters.splice(0)) w.reject(err);
        }
        await topic.log.close();
      }
    },
  };
}

function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}
