import type { Admin, Consumer, ICustomPartitioner, ISocketFactory, LogEntry, Producer } from 'kafkajs';
import { loadKafkajs } from './kafkajs-runtime.ts';
import type { Logger } from '../../logger.ts';
import { GroupCommitConsumer } from './group-commit-consumer.ts';
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

/**
 * Kafka bus (kafkajs). Publish is the edge's hot path: one producer.send per batch, no compression,
 * and it fails fast (BusUnavailableError within PUBLISH_TIMEOUT_MS) so the edge answers 503 instead
 * of holding connections open while the cluster is away.
 *
 * Durability: idempotent producer with acks from every in-sync replica, so a 2xx means the cluster
 * holds the batch and a producer retry never writes it twice.
 *
 * Consumption is at least once: offsets are committed only after the handler resolved. What the
 * fetches bring in while the handler is busy is handed to it as one batch next (group commit,
 * group-commit-consumer.ts), across partitions, order within a partition kept. A handler that throws
 * gets the same batch again (in place, with backoff) until it succeeds or the subscription stops;
 * nothing is committed past a failed batch.
 */

/** Longest a publish may take before it is refused; the edge answers 503 with Retry-After. */
const PUBLISH_TIMEOUT_MS = 5_000;
/**
 * Longest a fetch waits for data. A broker answers as soon as data arrives (minBytes 1), but
 * not every implementation does (the librdkafka mock waits the full time), and it bounds the
 * 202-to-visible latency either way.
 */
const FETCH_MAX_WAIT_MS = 100;
/** A consumer that died without leaving its group is replaced after this long. */
const SESSION_TIMEOUT_MS = 10_000;
/** Backoff between attempts of a failing handler: doubles up to the cap. */
const HANDLER_RETRY_MS = { initial: 100, max: 5_000 };
/**
 * Partitions whose fetched batches kafkajs hands over at once per consumer; they are queued for the
 * handler (group-commit-consumer.ts), so one slow partition does not hold up the fetching of others.
 */
const PARTITIONS_CONSUMED_CONCURRENTLY = 4;
/**
 * Most bytes of messages one handler call gets (group-commit-consumer.ts). About 400 error batches of
 * 10 events: large enough that a handler's per-call cost is spread thin, small enough that one call's
 * Postgres transaction stays short.
 */
const MAX_BATCH_BYTES = 2 * 1024 * 1024;
/**
 * Most bytes of values per publish: Kafka refuses a record batch over the broker's `message.max.bytes`
 * (1 MiB by default) whole, and every message of a publish may land in one partition's batch. The Java
 * client's `max.request.size` default (1 MiB per request) keeps to it the same way. Callers that group
 * messages (the edge's coalescing publisher) split by it.
 */
export const MAX_PUBLISH_BYTES = 900 * 1024;
/** Longest a readiness ping or a lag reading may take (an operator's probe, a scrape); past it, it rejects. */
const ADMIN_TIMEOUT_MS = 2_000;

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** Defaults to MAX_BATCH_BYTES. */
  maxBatchBytes?: number;
}

/** kafkajs with our replacements installed first (kafkajs-runtime.ts). */
const runtime = loadKafkajs();
const { Kafka, CompressionTypes, logLevel, Partitioners } = runtime.kafkajs;

export async function createKafkaBus(opts: KafkaBusOptions): Promise<Bus> {
  const log = opts.logger.child({ component: 'kafka-bus' });
  if (runtime.refused) log.warn({ replacements: runtime.replacements }, runtime.refused);
  else log.info({ replacements: runtime.replacements }, 'kafkajs loaded with our replacements');
  const kafka = new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    connectionTimeout: 1_000,
    requestTimeout: PUBLISH_TIMEOUT_MS,
    // Short and few: a dead cluster must surface as an error in seconds, not after kafkajs's 30 s.
    retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 3 },
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => forwardKafkaLog(log, entry),
    socketFactory: noDelaySocketFactory,
  });

  const producer: Producer = kafka.producer({
    idempotent: true,
    // kafkajs refuses an idempotent producer with more than one request in flight per broker.
    maxInFlightRequests: 1,
    createPartitioner: rememberingPartitioner(),
    allowAutoTopicCreation: true,
  });
  try {
    await withTimeout(producer.connect(), PUBLISH_TIMEOUT_MS, 'connect');
  } catch (err) {
    await producer.disconnect().catch(() => undefined);
    throw new BusUnavailableError(`kafka unreachable at ${opts.brokers.join(',')}: ${(err as Error).message}`, { cause: err });
  }

  const consumers = new Set<Consumer>();
  /** The consumer groups this process runs, by topic and group, for lag(). */
  const groups = new Map<string, { topic: string; groupId: string; members: number }>();
  let closed = false;

  /** The admin client behind ping() and lag(): connected at first use, once; a failed connect is tried again next time. */
  let admin: Promise<Admin> | undefined;
  function adminClient(): Promise<Admin> {
    admin ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      return a;
    })().catch((err) => {
      admin = undefined;
      throw err;
    });
    return admin;
  }

  /**
   * Per group: the partitions' ends (ListOffsets) minus the group's commits (OffsetFetch), two requests per group; a
   * partition the group never committed counts from its first offset, where a new group starts (fromBeginning).
   * A group whose offsets cannot be read now (a topic whose metadata the broker has not given yet: kafkajs's
   * fetchTopicOffsets then throws) is left out of this answer; the others are still told.
   */
  async function lag(): Promise<BusLag[]> {
    if (!groups.size) return [];
    const read = async () => {
      const a = await adminClient();
      const told = await Promise.allSettled(
        [...groups.values()].map(async ({ topic, groupId }) => {
          const [ends, committed] = await Promise.all([a.fetchTopicOffsets(topic), a.fetchOffsets({ groupId, topics: [topic] })]);
          const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
          let messages = 0n;
          for (const p of ends) {
            const c = done.get(p.partition) ?? -1n;
            messages += BigInt(p.high) - (c >= 0n ? c : BigInt(p.low));
          }
          return { topic, group: groupId, messages: Number(messages) };
        }),
      );
      return told.flatMap((t) => (t.status === 'fulfilled' ? [t.value] : []));
    };
    return withTimeout(read(), ADMIN_TIMEOUT_MS, 'reading the consumer lag');
  }

  async function publish(topic: string, messages: BusMessage[]): Promise<void> {
    if (closed) throw new BusUnavailableError('bus closed');
    if (!messages.length) return;
    try {
      await withTimeout(
        producer.send({ topic, acks: -1, compression: CompressionTypes.None, messages: messages.map((m) => ({ key: m.key, value: m.value })) }),
        PUBLISH_TIMEOUT_MS,
        'publish',
      );
    } catch (err) {
      throw new BusUnavailableError(`kafka publish to ${topic} failed: ${(err as Error).message}`, { cause: err });
    }
  }

  async function subscribe(topic: string, groupId: string, handler: BatchHandler, subOpts: SubscribeOptions = {}): Promise<Subscription> {
    const consumer = kafka.consumer({
      groupId,
      maxWaitTimeInMs: FETCH_MAX_WAIT_MS,
      sessionTimeout: SESSION_TIMEOUT_MS,
      heartbeatInterval: 1_000,
      // Consumers ride out broker restarts: many retries, and kafkajs restarts a crashed consumer.
      retry: { initialRetryTime: 300, maxRetryTime: 30_000, retries: 10, restartOnFailure: async () => true },
    });
    const sublog = log.child({ topic, groupId });
    consumer.on(consumer.events.CRASH, (e) => sublog.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed'));
    let stopping = false;

    await consumer.connect();
    // A new group starts at the beginning, so nothing published before it first joined is missed.
    await consumer.subscribe({ topic, fromBeginning: true });
    // This member's partitions, from its latest group join (unknown, so all, before the first).
    let assigned: Map<string, Set<number>> | undefined;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assigned = new Map(Object.entries(e.payload.memberAssignment).map(([t, ps]) => [t, new Set(ps)]));
    });
    const batches = new GroupCommitConsumer({
      handler,
      commit: (offsets) => consumer.commitOffsets(offsets),
      owns: (t, p) => !assigned || (assigned.get(t)?.has(p) ?? false),
      maxBatchBytes: opts.maxBatchBytes ?? MAX_BATCH_BYTES,
      maxInFlight: subOpts.maxInFlight,
      lingerMs: subOpts.lingerMs,
      retry: { initialMs: HANDLER_RETRY_MS.initial, maxMs: HANDLER_RETRY_MS.max },
      log: sublog,
    });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: PARTITIONS_CONSUMED_CONCURRENTLY,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        if (!batch.messages.length || stopping || !isRunning() || isStale()) return;
        const msgs: ConsumedMessage[] = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: m.offset,
          key: m.key ? m.key.toString() : undefined,
          value: m.value ?? Buffer.alloc(0),
        }));
        // Queued for the handler; the fetch position moves on, the commit waits for the handler.
        resolveOffset(msgs[msgs.length - 1]!.offset);
        await batches.add(msgs, heartbeat);
      },
    });
    consumers.add(consumer);
    const groupKey = `${topic}\0${groupId}`;
    const group = groups.get(groupKey) ?? { topic, groupId, members: 0 };
    group.members++;
    groups.set(groupKey, group);
    return {
      async stop() {
        stopping = true;
        consumers.delete(consumer);
        if (--group.members === 0) groups.delete(groupKey);
        // No new fetches; what was fetched is handled and committed while the consumer is still in
        // its group; then disconnect() leaves it.
        consumer.pause([{ topic }]);
        await batches.drain();
        await consumer.disconnect();
      },
    };
  }

  return {
    adapter: 'kafka',
    maxPublishBytes: MAX_PUBLISH_BYTES,
    publish,
    subscribe,
    async ping() {
      await withTimeout(
        adminClient().then((a) => a.describeCluster()),
        ADMIN_TIMEOUT_MS,
        'asking the cluster for its metadata',
      );
    },
    lag,
    async close() {
      closed = true;
      const a = admin;
      admin = undefined;
      await a?.then((c) => c.disconnect()).catch(() => undefined);
      await Promise.all([...consumers].map((c) => c.disconnect().catch(() => undefined)));
      consumers.clear();
      await producer.disconnect().catch(() => undefined);
    },
  };
}

function forwardKafkaLog(log: Logger, { level, log: entry }: LogEntry): void {
  const { message, ...extra } = entry;
  if (level === logLevel.ERROR) log.error(extra, message);
  else if (level === logLevel.WARN) log.warn(extra, message);
  else log.debug(extra, message);
}

/**
 * kafkajs's own socket factory (TLS, keep-alive), plus TCP_NODELAY, as the Java client and librdkafka set it.
 * kafkajs leaves Nagle's algorithm on, so a request written while an earlier one is unacknowledged can wait
 * for the peer's delayed ACK (40 ms on Linux): behind a relaying proxy every produce took ~88 ms, and under
 * load the stalls showed as the edge's tail latency.
 */
const kafkajsSocketFactory = runtime.socketFactory?.();
/** Undefined when kafkajs's factory is not where 2.2.4 keeps it: kafkajs then uses its own default. */
export const noDelaySocketFactory: ISocketFactory | undefined = kafkajsSocketFactory && ((args) => kafkajsSocketFactory(args).setNoDelay(true));

/** Keys whose partition is remembered; past it the memory starts over. */
const REMEMBERED_KEYS = 10_000;

/**
 * kafkajs's DefaultPartitioner (murmur2 of the key modulo the partition count, as the Java client), with each
 * key's partition remembered per partition count. For a keyed message the answer depends on nothing else, and
 * the edge keys by project, a small set; kafkajs otherwise hashes the key and filters the partition list anew
 * for every message of every send. Messages with an explicit partition or no string key go to the default.
 */
export function rememberingPartitioner(base: ICustomPartitioner = Partitioners.DefaultPartitioner): ICustomPartitioner {
  return () => {
    const partition = base();
    const known = new Map<string, number>();
    return (args) => {
      const { message, partitionMetadata } = args;
      if ((message.partition !== undefined && message.partition !== null) || typeof message.key !== 'string') return partition(args);
      const id = `${partitionMetadata.length}:${message.key}`;
      let p = known.get(id);
      if (p === undefined) {
        p = partition(args);
        if (known.size >= REMEMBERED_KEYS) known.clear();
        known.set(id, p);
      }
      return p;
    };
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
