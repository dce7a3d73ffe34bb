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
 * In-process bus: the embedded default, one process running every role. Two ways to hold a message:
 *
 * - With a log directory (`npm start`: DATA_DIR/bus, local-log.ts): publish resolves once the messages are
 *   written and synced to the topic's log, as Kafka acks once its replicas hold them; consumers run behind.
 *   A handler that fails is retried, with backoff, until it succeeds (its messages are safe on disk), and a
 *   group's progress is committed to the log after each batch, so a restart resumes after the last commit and
 *   re-delivers at most what was in flight (handlers are idempotent).
 * - Without one (tests, like PGlite in memory): there is nothing to hold the messages but their processing, so
 *   publish resolves once every consumer group of the topic has run its handler on them. If a handler keeps
 *   failing (HANDLER_ATTEMPTS times), publish rejects with BusUnavailableError and the edge answers 503;
 *   handlers are idempotent, so the client's retry is safe.
 *
 * Both:
 * - One partition per topic (0), offsets count up from 0 per topic (with a log, across restarts), so order is
 *   publish order.
 * - A group runs up to its subscription's `maxInFlight` batches at once (default 1: its handler never runs twice at
 *   once); with a log, commits stay in offset order. Waiting messages are handed to the handler together (up to
 *   MAX_BATCH messages and MAX_BATCH_BYTES) to keep the embedded hot path cheap.
 * - A group outlives its subscription: while a group has no active member (stopped, restarting), messages for
 *   it wait (without a log, their publish stays pending until a member processed them).
 * - A topic with no group yet keeps its messages the same way; the first group to subscribe gets them (with a
 *   log, a group that never committed starts at the oldest message on disk).
 * - Waiting messages are bounded (MAX_WAITING messages and MAX_WAITING_BYTES per group or topic): beyond that,
 *   publish rejects at once rather than growing memory.
 * - A group with several members delivers to one of them at a time (the first still active).
 */

export interface InProcessBusOptions {
  /** Where the topics' logs live; undefined: no log (publish resolves once processed). */
  logDir?: string;
  /** Handler failures (with a log, retried) and log trouble are reported here. */
  logger?: Logger;
  /** Where a log segment rolls (local-log.ts's SEGMENT_BYTES); tests make it small. */
  segmentBytes?: number;
  /** Bytes of message values that may wait per group or topic (MAX_WAITING_BYTES); tests make it small. */
  maxWaitingBytes?: number;
}

const HANDLER_ATTEMPTS = 3;
const HANDLER_RETRY_MS = 20;
/** With a log, the longest wait between two attempts of a failing handler. */
const HANDLER_RETRY_MAX_MS = 5_000;
const MAX_BATCH = 1_000;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_WAITING = 100_000;
const MAX_WAITING_BYTES = 256 * 1024 * 1024;

interface Job {
  messages: ConsumedMessage[];
  bytes: number;
  done(err?: Error): void;
  /** A batch given back unprocessed (its member left): it runs again alone, in its old place in the commit order. */
  run?: Run;
}

/** With a log: a batch handed to the handler, not yet committed. Commits advance over the finished prefix. */
interface Run {
  end: bigint;
  finished: boolean;
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
  running: number;
  /** Messages of the batches running now (lag() without a log). */
  runningMessages: number;
  /** The batches in flight; stop() waits on them. */
  inFlight: Set<Promise<void>>;
  /** With a log: the batches handed out and not yet committed, in offset order. */
  runs: Run[];
}

interface Topic {
  name: string;
  /** Without a log: the next offset. With one, the log numbers messages. */
  nextOffset: bigint;
  log?: TopicLog;
  groups: Map<string, Group>;
  /** Published before any group existed (without a log; with one, they are read back from it). */
  orphans: Job[];
  orphanCount: number;
  orphanBytes: number;
}

const noop = () => undefined;
const bytesOf = (messages: { value: Buffer }[]) => messages.reduce((n, m) => n + m.value.length, 0);
const GIVEN_BACK = Symbol('given back');

export function createInProcessBus(opts: InProcessBusOptions = {}): Bus {
  const topics = new Map<string, Topic>();
  const logger = opts.logger;
  const maxWaitingBytes = opts.maxWaitingBytes ?? MAX_WAITING_BYTES;
  let closed = false;

  function topicOf(name: string): Topic {
    let t = topics.get(name);
    if (!t) {
      const log = opts.logDir
        ? openTopicLog(topicLogDir(opts.logDir, name), (err, what) => logger?.error({ err, topic: name }, `bus log: ${what} failed`), opts.segmentBytes)
        : undefined;
      t = { name, nextOffset: 0n, log, groups: new Map(), orphans: [], orphanCount: 0, orphanBytes: 0 };
      topics.set(name, t);
    }
    return t;
  }

  function enqueue(group: Group, job: Job, front = false): void {
    if (front) group.queue.unshift(job);
    else group.queue.push(job);
    group.waiting += job.messages.length;
    group.waitingBytes += job.bytes;
    drain(group);
  }

  function drain(group: Group): void {
    while (group.running < group.maxInFlight && group.members.length && group.queue.length) startBatch(group);
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
    const topic = group.topic;
    let run = jobs[0]!.run;
    if (topic.log && !run) {
      run = { end: BigInt(messages[messages.length - 1]!.offset) + 1n, finished: false };
      group.runs.push(run);
    }
    group.running++;
    group.runningMessages += count;
    const work = topic.log ? runUntilDone(group, messages, topic.name) : runWithRetries(group.members[0]!, messages);
    const settled: Promise<void> = work.then((outcome) => {
      group.running--;
      group.runningMessages -= count;
      group.inFlight.delete(settled);
      if (outcome === GIVEN_BACK) enqueue(group, { messages, bytes, done: noop, run }, true);
      else {
        if (run) {
          run.finished = true;
          commitFinished(topic, group);
        }
        for (const job of jobs) job.done(outcome);
      }
      drain(group);
    });
    group.inFlight.add(settled);
  }

  /** With a log: commit past every finished batch up to the first one still running. */
  function commitFinished(topic: Topic, group: Group): void {
    let end: bigint | undefined;
    while (group.runs.length && group.runs[0]!.finished) end = group.runs.shift()!.end;
    if (end !== undefined) topic.log!.commit(group.id, end);
  }

  /**
   * With a log: run the batch on the group's first member, retrying with backoff until it succeeds. When no member
   * is left (all stopped) or the bus closes, the batch is given back uncommitted: the next member runs it, or the
   * next start reads it back from the log.
   */
  async function runUntilDone(group: Group, messages: ConsumedMessage[], topic: string): Promise<undefined | typeof GIVEN_BACK> {
    for (let attempt = 1; ; attempt++) {
      const handler = group.members[0];
      if (closed || !handler) return GIVEN_BACK;
      try {
        await handler(messages);
        return undefined;
      } catch (err) {
        logger?.warn({ err, topic, group: group.id, attempt, messages: messages.length }, 'bus handler failed; retrying');
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
    const topic = topicOf(topicName);
    const bytes = bytesOf(messages);
    refuseIfFull(topic, messages.length, bytes);

    if (topic.log) {
      let first: bigint;
      try {
        first = await topic.log.append(messages);
      } catch (err) {
        throw new BusUnavailableError(`in-process bus: cannot write the log of ${topicName}: ${(err as Error).message}`, { cause: err });
      }
      const batch = consumed(topicName, messages, first);
      if (topic.groups.size) for (const g of topic.groups.values()) enqueue(g, { messages: batch, bytes, done: noop });
      else {
        topic.orphanCount += batch.length;
        topic.orphanBytes += bytes;
      }
      return;
    }

    const batch = consumed(topicName, messages, topic.nextOffset);
    topic.nextOffset += BigInt(messages.length);
    const groups = [...topic.groups.values()];
    if (!groups.length) {
      await new Promise<void>((resolve, reject) => {
        topic.orphans.push({ messages: batch, bytes, done: (err) => (err ? reject(err) : resolve()) });
        topic.orphanCount += batch.length;
        topic.orphanBytes += bytes;
      });
      return;
    }
    const results = await Promise.all(groups.map((g) => new Promise<Error | undefined>((resolve) => enqueue(g, { messages: batch, bytes, done: resolve }))));
    const failed = results.find((e) => e);
    if (failed) throw failed;
  }

  /** A group's first member in this process: without a log it inherits the topic's orphans; with one it reads what it has not committed. */
  function createGroup(topic: Topic, groupId: string, maxInFlight: number): Group {
    const group: Group = {
      id: groupId,
      topic,
      members: [],
      queue: [],
      waiting: 0,
      waitingBytes: 0,
      maxInFlight,
      running: 0,
      runningMessages: 0,
      inFlight: new Set(),
      runs: [],
    };
    topic.groups.set(groupId, group);
    if (topic.log) {
      const committed = topic.log.committed(groupId);
      const from = committed ?? topic.log.startOffset;
      // A group that never committed says where it starts, so retention keeps what it still has to read.
      if (committed === undefined) topic.log.commit(groupId, from);
      const records = topic.log.readFrom(from);
      for (let i = 0; i < records.length; i += MAX_BATCH) {
        const slice = consumed(topic.name, records.slice(i, i + MAX_BATCH));
        enqueue(group, { messages: slice, bytes: bytesOf(slice), done: noop });
      }
    } else {
      // With several groups subscribing later, only this first one sees those messages (like a Kafka group
      // joining late without fromBeginning would not): acceptable for one-process embedded use.
      for (const job of topic.orphans) enqueue(group, job);
      topic.orphans = [];
    }
    topic.orphanCount = 0;
    topic.orphanBytes = 0;
    return group;
  }

  async function subscribe(topicName: string, groupId: string, handler: BatchHandler, subscribeOpts?: SubscribeOptions): Promise<Subscription> {
    if (closed) throw new BusUnavailableError('bus closed');
    const topic = topicOf(topicName);
    const g = topic.groups.get(groupId) ?? createGroup(topic, groupId, Math.max(1, subscribeOpts?.maxInFlight ?? 1));
    g.members.push(handler);
    drain(g);
    let stopped = false;
    return {
      async stop() {
        if (stopped) return;
        stopped = true;
        const i = g.members.indexOf(handler);
        if (i >= 0) g.members.splice(i, 1);
        await Promise.all(g.inFlight);
      },
    };
  }

  return {
    adapter: 'in-process',
    publish,
    subscribe,
    /** With a log: a copy of it for a backup. The open topics' logs are taken in one turn (local-log.ts), the rest copied. */
    async snapshot(dest) {
      const logDir = opts.logDir;
      if (!logDir) throw new Error('the in-process bus runs without a log: there is nothing to copy');
      const names = await readdir(logDir).catch(() => [] as string[]);
      const open = new Map<string, TopicLog>();
      for (const t of topics.values()) if (t.log) open.set(path.basename(topicLogDir(logDir, t.name)), t.log);
      const taking = names.map((n) => open.get(n)?.snapshot(path.join(dest, n)));
      await Promise.all(taking);
      await mkdir(dest, { recursive: true });
      // A topic no one here opened: nothing writes it while this process holds the data directory.
      for (const [i, n] of names.entries()) {
        if (!taking[i]) await cp(path.join(logDir, n), path.join(dest, n), { recursive: true, verbatimSymlinks: true, filter: (src) => !src.endsWith('.tmp') });
      }
    },
    /** With a log: its end minus the group's commit. Without one: the messages waiting for the group or in its handler. */
    async lag() {
      const out: BusLag[] = [];
      for (const topic of topics.values()) {
        for (const g of topic.groups.values()) {
          const messages = topic.log ? Number(topic.log.nextOffset - (topic.log.committed(g.id) ?? topic.log.startOffset)) : g.waiting + g.runningMessages;
          out.push({ topic: topic.name, group: g.id, messages });
        }
      }
      return out;
    },
    async close() {
      closed = true;
      const err = new BusUnavailableError('bus closed');
      for (const topic of topics.values()) {
        for (const job of topic.orphans) job.done(err);
        topic.orphans = [];
        for (const group of topic.groups.values()) {
          group.members = [];
          await Promise.all(group.inFlight);
          for (const job of group.queue) job.done(err);
          group.queue = [];
        }
        await topic.log?.close();
      }
    },
  };
}

/** Without a log: runs the handler, retrying a few times; resolves with the last error, or undefined on success. */
async function runWithRetries(handler: BatchHandler, messages: ConsumedMessage[]): Promise<Error | undefined> {
  let last: unknown;
  for (let attempt = 1; attempt <= HANDLER_ATTEMPTS; attempt++) {
    try {
      await handler(messages);
      return undefined;
    } catch (err) {
      last = err;
      if (attempt < HANDLER_ATTEMPTS) await new Promise((r) => setTimeout(r, HANDLER_RETRY_MS * attempt));
    }
  }
  return new BusUnavailableError(`in-process bus: handler failed ${HANDLER_ATTEMPTS} times: ${(last as Error)?.message ?? String(last)}`, {
    cause: last,
  });
}
