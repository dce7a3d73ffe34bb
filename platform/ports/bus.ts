/**
 * Bus port: durable hand-off between roles. Adapters: Kafka via kafkajs (KAFKA_BROKERS; idempotent
 * producer, acks from all in-sync replicas) and in-process (the embedded default: a log on disk under the
 * data dir; publish resolves once the messages are written and synced to it, and consumers read behind it
 * and commit their offsets to it). With either, publish resolving says the messages are safe, not that
 * they were processed.
 *
 * Delivery is at least once: a handler may see a message again after a crash, so every effect a
 * handler has must be idempotent. A subscription commits only after its handler resolved.
 */
export interface BusMessage {
  key?: string;
  value: Buffer;
}

export interface ConsumedMessage extends BusMessage {
  topic: string;
  partition: number;
  offset: string;
}

export type BatchHandler = (messages: ConsumedMessage[]) => Promise<void>;

export interface SubscribeOptions {
  /**
   * Batches the handler may work on at once (default 1). Above 1 the handler must not depend on the
   * order of batches; commits stay in order.
   */
  maxInFlight?: number;
  /**
   * How long a batch smaller than the adapter's largest may wait for more messages before the handler gets it
   * (default 0: at once). Kafka's producer `linger.ms`, on the consuming side: at a trickle of messages the handler
   * runs once per lingerMs instead of once per message, so its per-call cost (a database transaction, an
   * analytical insert that becomes a part to merge) is paid once for many. Delivery guarantees are unchanged: the
   * messages are durable before they wait, and committed only after the handler.
   */
  lingerMs?: number;
}

export interface Subscription {
  /** Stop consuming; resolves when in-flight handlers are done. */
  stop(): Promise<void>;
}

export interface Bus {
  readonly adapter: 'kafka' | 'in-process';
  /**
   * Most bytes of message values one publish should carry (Kafka: under the broker's `message.max.bytes`,
   * which refuses a larger record batch whole); undefined when the bus has no such limit.
   */
  readonly maxPublishBytes?: number;
  /** Resolves once the bus holds the messages durably (Kafka: acked by all ISRs). Rejects if it cannot. */
  publish(topic: string, messages: BusMessage[]): Promise<void>;
  /** Consume `topic` as consumer group `groupId`; offsets are committed after `handler` resolves. */
  subscribe(topic: string, groupId: string, handler: BatchHandler, opts?: SubscribeOptions): Promise<Subscription>;
  /**
   * Resolves when the bus answers (Kafka: the cluster's metadata came back); rejects otherwise. For readiness
   * (`/readyz`). Absent where there is nothing to reach (the in-process bus lives in the process).
   */
  ping?(): Promise<void>;
  /** Per consumer group this process subscribed: messages of its topic it has not processed (committed) yet. */
  lag?(): Promise<BusLag[]>;
  /**
   * Resolves once every consumer group this process subscribed (with a member now) has processed and committed
   * everything published before the call: true if it waited for one, false if all had already. Rejects if the bus
   * closes or the group stops first. How a test waits for processing (publish resolves before it). Embedded only
   * (the in-process bus knows its logs' ends and its groups' commits).
   */
  drained?(): Promise<boolean>;
  /**
   * Embedded only (the in-process bus's logs): copy its files into `dest` for a backup, consistent as of the call
   * (platform/data-dir/snapshot.ts). Absent where the engine has its own tools (Kafka).
   */
  snapshot?(dest: string): Promise<void>;
  close(): Promise<void>;
}

export interface BusLag {
  topic: string;
  group: string;
  messages: number;
}

/** Thrown by publish when the bus cannot take the messages now; a retry may help. */
export class BusUnavailableError extends Error {
  readonly retryable = true;
}
