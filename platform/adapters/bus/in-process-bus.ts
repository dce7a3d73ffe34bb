import { BusUnavailableError, type BatchHandler, type Bus, type BusMessage, type ConsumedMessage, type Subscription } from '../../ports/bus.ts';

/**
 * In-process bus: the embedded default, one process running every role.
 *
 * There is no log on disk, so "the bus holds it" means "it was processed": publish resolves once
 * every consumer group of the topic has run its handler on the messages. If a handler keeps
 * failing (HANDLER_ATTEMPTS times), publish rejects with BusUnavailableError and the edge answers
 * 503; handlers are idempotent, so the client's retry is safe.
 *
 * - One partition per topic (0), offsets count up from 0 per topic, so order is publish order.
 * - Each group processes serially: its handler never runs twice at once. Queued publishes are
 *   handed to the handler together (up to MAX_BATCH messages) to keep the embedded hot path cheap.
 * - A group outlives its subscription: while a group has no active member (stopped, restarting),
 *   messages for it wait, and their publish stays pending until a member processed them.
 * - A topic with no group yet keeps its messages the same way; the first group to subscribe gets
 *   them. Waiting messages are bounded (MAX_WAITING per group or topic): beyond that, publish
 *   rejects at once rather than growing memory.
 * - A group with several members delivers to one of them at a time (the first still active).
 */

const HANDLER_ATTEMPTS = 3;
const HANDLER_RETRY_MS = 20;
const MAX_BATCH = 1_000;
const MAX_WAITING = 100_000;

interface Job {
  messages: ConsumedMessage[];
  done(err?: Error): void;
}

interface Group {
  id: string;
  members: BatchHandler[];
  queue: Job[];
  waiting: number;
  running: boolean;
  /** Resolves when the batch in flight (if any) is done; stop() waits on it. */
  inFlight: Promise<void>;
}

interface Topic {
  nextOffset: bigint;
  groups: Map<string, Group>;
  /** Published before any group existed. */
  orphans: Job[];
  orphanCount: number;
}

export function createInProcessBus(): Bus {
  const topics = new Map<string, Topic>();
  let closed = false;

  function topicOf(name: string): Topic {
    let t = topics.get(name);
    if (!t) {
      t = { nextOffset: 0n, groups: new Map(), orphans: [], orphanCount: 0 };
      topics.set(name, t);
    }
    return t;
  }

  function enqueue(group: Group, job: Job): void {
    group.queue.push(job);
    group.waiting += job.messages.length;
    drain(group);
  }

  function drain(group: Group): void {
    if (group.running || !group.members.length || !group.queue.length) return;
    group.running = true;
    const handler = group.members[0];
    const jobs: Job[] = [];
    let count = 0;
    while (group.queue.length && (count === 0 || count + group.queue[0].messages.length <= MAX_BATCH)) {
      const job = group.queue.shift()!;
      jobs.push(job);
      count += job.messages.length;
    }
    group.waiting -= count;
    const messages = jobs.length === 1 ? jobs[0].messages : jobs.flatMap((j) => j.messages);
    group.inFlight = runWithRetries(handler, messages).then((err) => {
      for (const job of jobs) job.done(err);
      group.running = false;
      drain(group);
    });
  }

  async function publish(topicName: string, messages: BusMessage[]): Promise<void> {
    if (closed) throw new BusUnavailableError('bus closed');
    if (!messages.length) return;
    const topic = topicOf(topicName);
    const groups = [...topic.groups.values()];
    const full = groups.length ? groups.some((g) => g.waiting + messages.length > MAX_WAITING) : topic.orphanCount + messages.length > MAX_WAITING;
    if (full) throw new BusUnavailableError(`in-process bus: too many messages waiting on ${topicName}`);

    const consumed: ConsumedMessage[] = messages.map((m) => ({
      topic: topicName,
      partition: 0,
      offset: (topic.nextOffset++).toString(),
      key: m.key,
      value: m.value,
    }));

    if (!groups.length) {
      await new Promise<void>((resolve, reject) => {
        topic.orphans.push({ messages: consumed, done: (err) => (err ? reject(err) : resolve()) });
        topic.orphanCount += consumed.length;
      });
      return;
    }
    const results = await Promise.all(groups.map((g) => new Promise<Error | undefined>((resolve) => enqueue(g, { messages: consumed, done: resolve }))));
    const failed = results.find((e) => e);
    if (failed) throw failed;
  }

  async function subscribe(topicName: string, groupId: string, handler: BatchHandler): Promise<Subscription> {
    if (closed) throw new BusUnavailableError('bus closed');
    const topic = topicOf(topicName);
    let group = topic.groups.get(groupId);
    if (!group) {
      group = { id: groupId, members: [], queue: [], waiting: 0, running: false, inFlight: Promise.resolve() };
      topic.groups.set(groupId, group);
      if (topic.orphans.length) {
        // The first group inherits what waited for a consumer. With several groups subscribing
        // later, only this first one sees those messages (like a Kafka group joining late
        // without fromBeginning would not): acceptable for one-process embedded use.
        for (const job of topic.orphans) enqueue(group, job);
        topic.orphans = [];
        topic.orphanCount = 0;
      }
    }
    const g = group;
    g.members.push(handler);
    drain(g);
    let stopped = false;
    return {
      async stop() {
        if (stopped) return;
        stopped = true;
        const i = g.members.indexOf(handler);
        if (i >= 0) g.members.splice(i, 1);
        await g.inFlight;
      },
    };
  }

  return {
    adapter: 'in-process',
    publish,
    subscribe,
    async close() {
      closed = true;
      const err = new BusUnavailableError('bus closed');
      for (const topic of topics.values()) {
        for (const job of topic.orphans) job.done(err);
        topic.orphans = [];
        for (const group of topic.groups.values()) {
          group.members = [];
          await group.inFlight;
          for (const job of group.queue) job.done(err);
          group.queue = [];
        }
      }
    },
  };
}

/** Runs the handler, retrying a few times; resolves with the last error, or undefined on success. */
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
