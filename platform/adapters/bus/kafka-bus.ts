import './kafkajs-native-crc.ts';
import { Kafka, Partitioners, CompressionTypes, logLevel, type Consumer, type LogEntry, type Producer } from 'kafkajs';
import type { Logger } from '../../logger.ts';
import { BusUnavailableError, type BatchHandler, type Bus, type BusMessage, type ConsumedMessage, type Subscription } from '../../ports/bus.ts';

/**
 * Kafka bus (kafkajs). Publish is the edge's hot path: one producer.send per batch, no compression,
 * and it fails fast (BusUnavailableError within PUBLISH_TIMEOUT_MS) so the edge answers 503 instead
 * of holding connections open while the cluster is away.
 *
 * Durability: idempotent producer with acks from every in-sync replica, so a 2xx means the cluster
 * holds the batch and a producer retry never writes it twice.
 *
 * Consumption is at least once: offsets are committed only after the handler resolved. A handler
 * that throws gets the same batch again (in place, with backoff) until it succeeds or the
 * subscription stops; nothing is committed past a failed batch.
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
 * Partitions whose batches are handled at once per consumer. The error handler spends most of a batch
 * waiting on Postgres and ClickHouse, so one partition at a time left the processor mostly idle
 * (bench/README.md, "Whole path"). Order within a partition is kept.
 */
const PARTITIONS_CONSUMED_CONCURRENTLY = 4;

export interface KafkaBusOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** Defaults to PARTITIONS_CONSUMED_CONCURRENTLY; the bench sets 1 to measure the difference. */
  partitionsConsumedConcurrently?: number;
}

export async function createKafkaBus(opts: KafkaBusOptions): Promise<Bus> {
  const log = opts.logger.child({ component: 'kafka-bus' });
  const kafka = new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    connectionTimeout: 1_000,
    requestTimeout: PUBLISH_TIMEOUT_MS,
    // Short and few: a dead cluster must surface as an error in seconds, not after kafkajs's 30 s.
    retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 3 },
    logLevel: logLevel.WARN,
    logCreator: () => (entry: LogEntry) => forwardKafkaLog(log, entry),
  });

  const producer: Producer = kafka.producer({
    idempotent: true,
    // kafkajs refuses an idempotent producer with more than one request in flight per broker.
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: true,
  });
  try {
    await withTimeout(producer.connect(), PUBLISH_TIMEOUT_MS, 'connect');
  } catch (err) {
    await producer.disconnect().catch(() => undefined);
    throw new BusUnavailableError(`kafka unreachable at ${opts.brokers.join(',')}: ${(err as Error).message}`, { cause: err });
  }

  const consumers = new Set<Consumer>();
  let closed = false;

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

  async function subscribe(topic: string, groupId: string, handler: BatchHandler): Promise<Subscription> {
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
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently ?? PARTITIONS_CONSUMED_CONCURRENTLY,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale }) => {
        if (!batch.messages.length) return;
        const msgs: ConsumedMessage[] = batch.messages.map((m) => ({
          topic: batch.topic,
          partition: batch.partition,
          offset: m.offset,
          key: m.key ? m.key.toString() : undefined,
          value: m.value ?? Buffer.alloc(0),
        }));
        let delay = HANDLER_RETRY_MS.initial;
        for (let attempt = 1; ; attempt++) {
          try {
            await handler(msgs);
            break;
          } catch (err) {
            sublog.error({ err, partition: batch.partition, firstOffset: batch.firstOffset(), attempt }, 'handler failed; batch not committed, retrying');
            // Leaving without resolving: kafkajs fetches this batch again from the committed offset.
            if (stopping || !isRunning() || isStale()) return;
            await sleep(delay);
            delay = Math.min(delay * 2, HANDLER_RETRY_MS.max);
            await heartbeat();
            if (stopping || !isRunning() || isStale()) return;
          }
        }
        const last = msgs[msgs.length - 1].offset;
        resolveOffset(last);
        await commitOffsetsIfNecessary({
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(last) + 1n).toString() }] }],
        });
        await heartbeat();
      },
    });
    consumers.add(consumer);
    return {
      async stop() {
        stopping = true;
        consumers.delete(consumer);
        // disconnect() stops the run loop and waits for the batch in flight.
        await consumer.disconnect();
      },
    };
  }

  return {
    adapter: 'kafka',
    publish,
    subscribe,
    async close() {
      closed = true;
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

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
