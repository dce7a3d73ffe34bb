import type { Platform } from '../../platform/platform.ts';
import type { ConsumedMessage, Subscription } from '../../platform/ports/bus.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { subscriptionMatches, type ProjectEvent } from '../../schemas/project-events.ts';
import { deliveriesRepository, type ClaimedDelivery, type Target } from './deliveries-repository.ts';
import { createWebhookAttempts, type AttemptOutcome, type WebhookAttempts } from './webhook-attempts.ts';

/**
 * Outbound webhook dispatch (spec §3.2, §6, §9). Phases:
 *  1. fan-out: consume the project events topic (schemas/bus/project-events.ts); per event, one delivery row per matching target
 *     (project endpoints by subscription, only the endpoints an alert rule's event names, or only the event's inbox
 *     target), id derived from event
 *     and target, inserted with ON CONFLICT DO NOTHING: a re-delivered message sends nothing twice.
 *     The bus offset is committed after the rows are stored, so no event is lost.
 *  2. prompt attempt: the new deliveries are inserted already claimed (leased) and sent right away.
 *  3. sweep: every minute, claim due deliveries (retries, replays, leases that ran out because a
 *     sender died mid-send) with FOR UPDATE SKIP LOCKED, so several processors can sweep at once.
 *  4. attempt (webhook-attempts.ts): wait for the receiver's gate (receiver-gates.ts: a few deliveries in flight per
 *     receiver origin, so a slow receiver cannot hold the others' send slots; a wait the lease cannot cover hands the
 *     delivery back for later), take a send slot, sign with the target's current secret(s), POST through the
 *     SSRF-guarded sender on a kept-alive connection to that receiver, record the attempt (in groups with the attempts
 *     finishing alongside: attempt-recorder.ts), then succeeded / pending with backoff / dead after maxAttempts.
 * Claimed batches are worked on up to BATCHES_IN_FLIGHT at once, so one batch waiting on a slow receiver does not
 * hold back the next.
 */
const BATCHES_IN_FLIGHT = 4;

export interface WebhookDispatcher {
  stop(): Promise<void>;
  /** Attempts by outcome since start (GET /metrics). */
  stats(): Record<AttemptOutcome, number>;
  /** Claim and send every delivery due now; resolves when those attempts are recorded. Returns how many were attempted. */
  sweepOnce(): Promise<number>;
  /** Resolves when the prompt first attempts started so far are recorded (tests, shutdown). */
  idle(): Promise<void>;
}

export interface DispatcherOptions {
  /** Sweep period; false disables the timer (tests call sweepOnce). Default LIMITS.webhook.sweepIntervalMs. */
  sweepIntervalMs?: number | false;
  /** Deliveries claimed per round trip. */
  batchSize?: number;
  /** Sends in flight at once per processor. */
  concurrency?: number;
  random?: () => number;
  /** Whole-attempt deadline; default LIMITS.webhook.attemptTimeoutMs (10 s). */
  attemptTimeoutMs?: number;
}

export async function startWebhookDispatcher(
  platform: Pick<Platform, 'bus' | 'clock' | 'db' | 'logger' | 'outbound'>,
  opts: DispatcherOptions = {},
): Promise<WebhookDispatcher> {
  const { db, clock, logger } = platform;
  const log = logger.child({ component: 'webhook-dispatcher' });
  const batchSize = opts.batchSize ?? 200;
  const attempts = createWebhookAttempts(platform, log, {
    concurrency: opts.concurrency ?? 64,
    attemptTimeoutMs: opts.attemptTimeoutMs ?? LIMITS.webhook.attemptTimeoutMs,
    random: opts.random,
  });
  const inflight = new Set<Promise<unknown>>();
  let stopped = false;

  const track = <T>(p: Promise<T>): Promise<T> => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p)).catch(() => undefined);
    return p;
  };

  async function handle(messages: ConsumedMessage[]): Promise<void> {
    const events: ProjectEvent[] = [];
    for (const m of messages) {
      const event = projectEvents.decode(m.value);
      if (!event) {
        log.error({ topic: m.topic, offset: m.offset }, 'dropping a malformed project event');
        continue;
      }
      events.push(event);
    }
    const claimedAt = clock.now();
    const fresh = await fanOut(platform, events);
    // Tracked (stop waits for it) and never rejected: each send records its own failure. (Stopping, the claimed
    // deliveries wait for their lease to run out and the next sweep, as a sender's that died mid-send.)
    if (fresh.length && !stopped) void track(promptSend(fresh, claimedAt));
  }

  /** The prompt first attempts of freshly inserted (already claimed) deliveries. */
  async function promptSend(fresh: ClaimedDelivery[], claimedAt: number): Promise<void> {
    const batches = batchRunner(attempts);
    for (let i = 0; i < fresh.length; i += batchSize) await batches.start(fresh.slice(i, i + batchSize), claimedAt);
    await batches.settled();
  }

  async function sweepOnce(): Promise<number> {
    let total = 0;
    const batches = batchRunner(attempts);
    try {
      for (;;) {
        const claimedAt = clock.now();
        const claimed = await deliveriesRepository.claimDue(db, claimedAt, batchSize);
        if (!claimed.length) return total;
        total += claimed.length;
        await batches.start(claimed, claimedAt);
        // A short claim does not mean nothing else is due: the row locks are taken above the LIMIT, so rows
        // another sweeper holds or has just claimed drop out of this claim after the limit was filled, while
        // due rows beyond it remain. Only an empty claim ends the sweep.
        if (stopped) return total;
      }
    } finally {
      await batches.settled();
    }
  }

  const subscription: Subscription = await platform.bus.subscribe(projectEvents.TOPIC, CONSUMER_GROUPS.webhookFanout, handle);

  let sweeping: Promise<number> | undefined;
  const runSweep = () => {
    if (sweeping || stopped) return;
    sweeping = track(sweepOnce())
      .catch((err) => {
        log.error({ err }, 'webhook sweep failed; the next one retries');
        return 0;
      })
      .finally(() => {
        sweeping = undefined;
      });
  };
  const period = opts.sweepIntervalMs ?? LIMITS.webhook.sweepIntervalMs;
  const timer = period === false ? undefined : setInterval(runSweep, period);
  timer?.unref();
  // Pick up whatever a previous run left pending or mid-send.
  if (period !== false) runSweep();

  const idle = async () => {
    while (inflight.size) await Promise.allSettled([...inflight]);
  };

  return {
    sweepOnce,
    idle,
    stats: () => ({ ...attempts.outcomes }),
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await subscription.stop();
      await idle();
      attempts.close();
    },
  };
}

/** Claimed batches worked on at once, at most BATCHES_IN_FLIGHT; `settled` resolves when every one is done. */
function batchRunner(attempts: WebhookAttempts) {
  const running = new Set<Promise<void>>();
  return {
    async start(claimed: ClaimedDelivery[], claimedAt: number): Promise<void> {
      while (running.size >= BATCHES_IN_FLIGHT) await Promise.race(running);
      const p: Promise<void> = attempts.attemptAll(claimed, claimedAt).finally(() => running.delete(p));
      running.add(p);
    },
    async settled(): Promise<void> {
      while (running.size) await Promise.all(running);
    },
  };
}

/**
 * 1. fan-out: the targets of a batch of events, one endpoint query per project, one inbox query per inbox. The new
 * deliveries are inserted already claimed for their prompt first attempt (one statement, one commit).
 */
async function fanOut({ db, clock }: Pick<Platform, 'clock' | 'db'>, events: ProjectEvent[]): Promise<ClaimedDelivery[]> {
  const items: Array<{ event: ProjectEvent; target: Target }> = [];
  const endpointsOf = new Map<string, Array<{ id: string; events: string[]; maxAttempts: number }>>();
  for (const ev of events) {
    if (ev.inboxId) {
      if (await deliveriesRepository.inboxHasWebhook(db, ev.inboxId, ev.projectId))
        items.push({ event: ev, target: { kind: 'inbox', id: ev.inboxId, maxAttempts: LIMITS.webhook.maxAttempts.default } });
      continue;
    }
    let endpoints = endpointsOf.get(ev.projectId);
    if (!endpoints) {
      endpoints = await deliveriesRepository.endpointsOf(db, ev.projectId);
      endpointsOf.set(ev.projectId, endpoints);
    }
    // An alert rule's event (issue 41) goes to the endpoints it names only, whatever they subscribe to.
    const targeted = ev.endpointIds && new Set(ev.endpointIds);
    for (const r of endpoints) {
      if (targeted ? targeted.has(r.id) : subscriptionMatches(r.events, ev.event))
        items.push({ event: ev, target: { kind: 'endpoint', id: r.id, maxAttempts: r.maxAttempts } });
    }
  }
  const fresh: ClaimedDelivery[] = [];
  // Bounded statements: a few hundred rows each.
  for (let i = 0; i < items.length; i += 500) fresh.push(...(await deliveriesRepository.insertClaimed(db, items.slice(i, i + 500), clock.now())));
  return fresh;
}
