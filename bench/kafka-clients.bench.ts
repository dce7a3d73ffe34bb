/**
 * kafkajs (as the service runs it: platform/adapters/bus/kafka-bus.ts, with the replacements of kafkajs-runtime.ts)
 * against @platformatic/kafka (maintained, pure TypeScript), on one librdkafka mock cluster, in one sitting, the two
 * alternating: producing with acks=-1 (every in-sync replica) in batches of the edge's size, then consuming the same
 * messages in a consumer group. Prints JSON: messages per second and CPU microseconds per message, per client and
 * round. The design card names kafkajs; these figures only decide whether a switch is worth raising (issue 24).
 *
 *   npm install --no-save @platformatic/kafka@1.35.0
 *   [KAFKA_BROKERS=host:9092] npx tsx bench/kafka-clients.bench.ts [--messages 60000] [--batch 200] [--rounds 2]
 *
 * @platformatic/kafka is not one of the project's packages (it asks for Node 22.19 or newer, and `npm install` on the
 * Node 20 the README names would warn about it): install it for a run with the first line. Without it the bench runs
 * kafkajs's rounds and says how to install the other client.
 */
import os from 'node:os';
import { pino } from 'pino';
import { createKafkaBus } from '../platform/adapters/bus/kafka-bus.ts';
import { startKafkaMockProcess } from '../test/support/kafka-mock-process.ts';
import { numberArg } from './support/cli-args.ts';

const MESSAGES = numberArg('messages', 60_000);
const BATCH = numberArg('batch', 200);
const ROUNDS = numberArg('rounds', 2);
const VALUE = Buffer.from(JSON.stringify({ v: 2, projectId: 'prj_bench', body: { batch: [{ message: 'x'.repeat(240) }] } }));

interface Phase {
  messagesPerSec: number;
  cpuMicrosPerMessage: number;
  seconds: number;
}

async function measure(run: () => Promise<void>): Promise<Phase> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    messagesPerSec: Math.round(MESSAGES / seconds),
    cpuMicrosPerMessage: +((cpu.user + cpu.system) / MESSAGES).toFixed(1),
    seconds: +seconds.toFixed(2),
  };
}

const keyOf = (i: number) => `prj_${i % 64}`;

async function kafkajsRound(brokers: string, topic: string): Promise<{ produce: Phase; consume: Phase }> {
  const bus = await createKafkaBus({ brokers: brokers.split(','), clientId: 'bench-kafkajs', logger: pino({ level: 'silent' }) });
  try {
    const produce = await measure(async () => {
      for (let i = 0; i < MESSAGES; i += BATCH) {
        const n = Math.min(BATCH, MESSAGES - i);
        await bus.publish(
          topic,
          Array.from({ length: n }, (_, j) => ({ key: keyOf(i + j), value: VALUE })),
        );
      }
    });
    let seen = 0;
    let done!: () => void;
    const all = new Promise<void>((r) => (done = r));
    let sub: Awaited<ReturnType<typeof bus.subscribe>> | undefined;
    const consume = await measure(async () => {
      sub = await bus.subscribe(topic, `g-${topic}`, async (messages) => {
        seen += messages.length;
        if (seen >= MESSAGES) done();
      });
      await all;
    });
    await sub?.stop();
    return { produce, consume };
  } finally {
    await bus.close();
  }
}

/** What the bench uses of @platformatic/kafka 1.35, typed here so the project typechecks without the package. */
interface PlatformaticKafka {
  Producer: new (
    opts: Record<string, unknown>,
  ) => {
    send(req: { messages: Array<{ topic: string; key: Buffer; value: Buffer }> }): Promise<unknown>;
    close(force?: boolean): Promise<void>;
  };
  Consumer: new (
    opts: Record<string, unknown>,
  ) => {
    consume(opts: Record<string, unknown>): Promise<AsyncIterable<unknown> & { close(): Promise<void> }>;
    close(force?: boolean): Promise<void>;
  };
  ProduceAcks: { ALL: number };
  stringDeserializers: unknown;
}

const PLATFORMATIC = '@platformatic/kafka';
const PLATFORMATIC_INSTALL = 'npm install --no-save @platformatic/kafka@1.35.0';

/** The package when installed; undefined (said once on stderr) when not. */
async function loadPlatformatic(): Promise<PlatformaticKafka | undefined> {
  try {
    return (await import(PLATFORMATIC)) as PlatformaticKafka;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    process.stderr.write(`@platformatic/kafka is not installed; its rounds are skipped. To compare: ${PLATFORMATIC_INSTALL}\n`);
    return undefined;
  }
}

async function platformaticRound(
  { Producer, Consumer, ProduceAcks, stringDeserializers }: PlatformaticKafka,
  brokers: string,
  topic: string,
): Promise<{ produce: Phase; consume: Phase }> {
  const producer = new Producer({ clientId: 'bench-platformatic', bootstrapBrokers: brokers.split(','), acks: ProduceAcks.ALL, autocreateTopics: true });
  try {
    const produce = await measure(async () => {
      for (let i = 0; i < MESSAGES; i += BATCH) {
        const n = Math.min(BATCH, MESSAGES - i);
        await producer.send({ messages: Array.from({ length: n }, (_, j) => ({ topic, key: Buffer.from(keyOf(i + j)), value: VALUE })) });
      }
    });
    const consumer = new Consumer({
      groupId: `g-${topic}`,
      clientId: 'bench-platformatic-consumer',
      bootstrapBrokers: brokers.split(','),
      deserializers: stringDeserializers,
      maxWaitTime: 100,
    });
    try {
      const consume = await measure(async () => {
        const stream = await consumer.consume({ autocommit: true, topics: [topic], mode: 'earliest', sessionTimeout: 10_000, heartbeatInterval: 500 });
        let seen = 0;
        for await (const _ of stream) {
          if (++seen >= MESSAGES) break;
        }
        await stream.close();
      });
      return { produce, consume };
    } finally {
      await consumer.close(true);
    }
  } finally {
    await producer.close(true);
  }
}

async function main() {
  // KAFKA_BROKERS: a real broker (Kafka 3.5+, Redpanda) instead of librdkafka's mock cluster.
  const kafka = process.env.KAFKA_BROKERS ? { brokers: process.env.KAFKA_BROKERS, stop: async () => {} } : await startKafkaMockProcess({ dataPath: 'direct' });
  const rounds: Array<Record<string, unknown>> = [];
  const platformatic = await loadPlatformatic();
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const client of ['kafkajs', '@platformatic/kafka'] as const) {
        const topic = `bench-clients-${client === 'kafkajs' ? 'kjs' : 'plt'}-${round}-${Date.now()}`;
        let r: { produce: Phase; consume: Phase };
        if (client !== 'kafkajs' && !platformatic) {
          rounds.push({ round, client, unavailable: `not installed: ${PLATFORMATIC_INSTALL}` });
          continue;
        }
        try {
          r = client === 'kafkajs' ? await kafkajsRound(kafka.brokers, topic) : await platformaticRound(platformatic!, kafka.brokers, topic);
        } catch (err) {
          // librdkafka's mock cluster (Debian 12's librdkafka 2.0) answers ApiVersions v3 with UNSUPPORTED_VERSION, and
          // @platformatic/kafka speaks only Kafka 3.5+: said in the output rather than thrown, so the kafkajs figures stand.
          const why = `${(err as Error).message}${(err as { errors?: Error[] }).errors?.[0] ? `: ${(err as { errors: Error[] }).errors[0]!.message}` : ''}`;
          rounds.push({ round, client, unavailable: why });
          process.stderr.write(`round ${round} ${client}: could not run on this broker: ${why}\n`);
          continue;
        }
        rounds.push({ round, client, ...r });
        process.stderr.write(
          `round ${round} ${client}: produce ${r.produce.messagesPerSec}/s (${r.produce.cpuMicrosPerMessage} µs CPU/msg), consume ${r.consume.messagesPerSec}/s (${r.consume.cpuMicrosPerMessage} µs CPU/msg)\n`,
        );
      }
    }
  } finally {
    await kafka.stop();
  }
  const best = (client: string, phase: 'produce' | 'consume') =>
    Math.max(...rounds.filter((r) => r.client === client && r[phase]).map((r) => (r[phase] as Phase).messagesPerSec));
  const ratio = (phase: 'produce' | 'consume') => {
    const [p, k] = [best('@platformatic/kafka', phase), best('kafkajs', phase)];
    return Number.isFinite(p) && Number.isFinite(k) ? +(p / k).toFixed(2) : null;
  };
  console.log(
    JSON.stringify(
      {
        bench: 'kafka-clients',
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
        messages: MESSAGES,
        batch: BATCH,
        valueBytes: VALUE.length,
        rounds,
        platformaticOverKafkajs: { produce: ratio('produce'), consume: ratio('consume') },
      },
      null,
      2,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
