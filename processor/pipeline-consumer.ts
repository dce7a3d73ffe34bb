import { ITEMS_PER_TURN, yieldToEventLoop } from '../platform/event-loop.ts';
import type { Logger } from '../platform/logger.ts';
import type { Bus, ConsumedMessage } from '../platform/ports/bus.ts';
import { addSummaries, emptySummary, type BatchSummary } from './batch-summary.ts';

/**
 * The one consumer scaffold every pipeline of the processor runs in (processor/README.md). Per delivery:
 *   1. decode   each bus message with its topic's module (schemas/bus/); one that does not decode is counted as
 *               `invalid_message`, logged and skipped (retrying cannot help)
 *   2. handle   the decoded batches through the pipeline; if it throws, the delivery is retried (every effect of a
 *               pipeline is idempotent)
 *   3. count    the delivery's summary into the totals since start (stats()), logged every TOTALS_LOG_MS while
 *               they change, so operators see drops in any role
 * and in the background:
 *   4. prune    the pipeline's ledger, when it has one, every `prune.intervalMs` (the first time after a random
 *               part of it, so processors spread out)
 */
const TOTALS_LOG_MS = 60_000;

export interface PipelineSpec<Batch, Reason extends string> {
  /** The logger's component name, e.g. `error-pipeline`. */
  name: string;
  topic: string;
  group: string;
  /** Deliveries handled at once. */
  maxInFlight: number;
  /** How long a small delivery waits for more (SubscribeOptions.lingerMs, PIPELINE_LINGER_MS); default 0. */
  lingerMs?: number;
  /** undefined: the message is no batch of the topic. `countDrop` counts events the decoding itself drops. */
  decode(value: Buffer, countDrop: (reason: Reason) => void): Batch | undefined;
  handle(batches: Batch[]): Promise<BatchSummary<Reason>>;
  prune?: { intervalMs: number; run(): Promise<number> };
  /** Waited for after the subscription stops (work the pipeline started in the background). */
  idle?(): Promise<void>;
}

export interface PipelineConsumer<Reason extends string> {
  /** Totals since start: accepted, duplicates and dropped by reason. */
  stats(): BatchSummary<Reason>;
  stop(): Promise<void>;
}

export async function startPipelineConsumer<Batch, Reason extends string>(
  deps: { bus: Bus; logger: Logger },
  spec: PipelineSpec<Batch, Reason | 'invalid_message'>,
): Promise<PipelineConsumer<Reason | 'invalid_message'>> {
  type R = Reason | 'invalid_message';
  const logger = deps.logger;
  let totals = emptySummary<R>();

  const sub = await deps.bus.subscribe(
    spec.topic,
    spec.group,
    async (messages: ConsumedMessage[]) => {
      // 1. decode
      const undecodable = emptySummary<R>();
      const countDrop = (reason: R) => (undecodable.dropped[reason] = (undecodable.dropped[reason] ?? 0) + 1);
      const batches: Batch[] = [];
      for (const [i, m] of messages.entries()) {
        if (i && i % ITEMS_PER_TURN === 0) await yieldToEventLoop();
        const batch = spec.decode(m.value, countDrop);
        if (batch !== undefined) batches.push(batch);
        else {
          countDrop('invalid_message');
          logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason: 'invalid_message' }, 'undecodable batch skipped');
        }
      }
      // 2. handle
      const summary = batches.length ? addSummaries(undecodable, await spec.handle(batches)) : undecodable;
      // 3. count
      totals = addSummaries(totals, summary);
      logger.debug(summary, 'batch processed');
    },
    { maxInFlight: spec.maxInFlight, lingerMs: spec.lingerMs },
  );

  let logged = totals;
  const totalsLog = setInterval(() => {
    if (totals === logged) return;
    logged = totals;
    logger.info({ totals }, `${spec.name} totals`);
  }, TOTALS_LOG_MS).unref();

  // 4. prune
  let pruneTimer: NodeJS.Timeout | undefined;
  let pruning: Promise<unknown> = Promise.resolve();
  let stopped = false;
  const prune = spec.prune;
  if (prune) {
    const run = () => {
      pruning = prune
        .run()
        .then((n) => n && logger.info({ pruned: n }, `${spec.name} ledger pruned`))
        .catch((err) => logger.warn({ err }, `pruning the ${spec.name} ledger failed; retried next time`))
        .finally(() => {
          if (!stopped) pruneTimer = setTimeout(run, prune.intervalMs).unref();
        });
    };
    pruneTimer = setTimeout(run, Math.random() * prune.intervalMs).unref();
  }

  return {
    stats: () => structuredClone(totals),
    async stop() {
      stopped = true;
      clearInterval(totalsLog);
      clearTimeout(pruneTimer);
      await pruning;
      await sub.stop();
      await spec.idle?.();
    },
  };
}
