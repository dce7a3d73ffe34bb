import type { Logger } from '../../platform/logger.ts';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { createAttemptRecorder } from './attempt-recorder.ts';
import { deliveriesRepository, LEASE_MS, type ClaimedDelivery, type SendTarget } from './deliveries-repository.ts';
import { nextDelayMs } from './backoff.ts';
import { createReceiverGates } from './receiver-gates.ts';
import { createWebhookAgents, sendWebhook } from './webhook-sender.ts';
import { discordMessage, slackMessage } from './chat-formats.ts';
import { SIGNATURE_HEADER, signatureHeader } from './webhook-signature.ts';

/**
 * Phase 4 of the dispatcher (webhook-dispatcher.ts), for a batch of claimed deliveries: per delivery, its target's
 * URL and secrets (one lookup per target per batch), then the receiver's gate (receiver-gates.ts: a few deliveries in
 * flight per receiver origin, so a slow receiver cannot hold the others' send slots; a wait the lease cannot cover
 * hands the delivery back for later), a send slot, the signed POST through the SSRF-guarded sender on a kept-alive
 * connection, and the attempt recorded (in groups with the attempts finishing alongside: attempt-recorder.ts):
 * succeeded / pending with backoff / dead after maxAttempts.
 */

/**
 * How an attempt ended: `succeeded` (2xx), `retrying` (failed, due again after its backoff), `dead` (failed for the
 * last time, or its target is gone), `lease_lost` (another processor owns the delivery now), `deferred` (its
 * receiver stayed busy: handed back unsent, due again shortly).
 */
export type AttemptOutcome = 'succeeded' | 'retrying' | 'dead' | 'lease_lost' | 'deferred';

export const USER_AGENT = 'Service-Webhooks/1.0';
/** A delivery handed back because its receiver stayed busy is due again after this. */
const BUSY_RECEIVER_DELAY_MS = 5_000;

export interface WebhookAttempts {
  /** Attempt every delivery of a batch claimed at `claimedAt`; resolves when each attempt is recorded (or failed to be). */
  attemptAll(claimed: ClaimedDelivery[], claimedAt: number): Promise<void>;
  /** Attempts by outcome since start. */
  outcomes: Record<AttemptOutcome, number>;
  /** Close the kept-alive connections (after the last attempt). */
  close(): void;
}

export function createWebhookAttempts(
  platform: Pick<Platform, 'clock' | 'db' | 'outbound'>,
  log: Logger,
  opts: { concurrency: number; attemptTimeoutMs: number; random?: () => number },
): WebhookAttempts {
  const { db, clock } = platform;
  const limit = createLimiter(opts.concurrency);
  const agents = createWebhookAgents();
  const recorder = createAttemptRecorder(db);
  const receivers = createReceiverGates(LIMITS.webhook.perReceiverConnections);
  const outcomes: Record<AttemptOutcome, number> = { succeeded: 0, retrying: 0, dead: 0, lease_lost: 0, deferred: 0 };

  async function attempt(d: ClaimedDelivery, targets: Map<string, Promise<SendTarget>>, claimedAt: number): Promise<void> {
    // One lookup per target per claimed batch: a batch often holds many deliveries to one endpoint.
    const key = d.endpointId ?? `inbox:${d.inboxId}`;
    let pending = targets.get(key);
    if (!pending) {
      pending = deliveriesRepository.sendTarget(db, d, clock.now());
      targets.set(key, pending);
    }
    const target = await pending;
    const url = target.url;
    if (!url) {
      const now = clock.now();
      const status = await deliveriesRepository.finishAttempt(
        db,
        { ...d, attempts: d.maxAttempts - 1 },
        { ok: false, error: 'target no longer has a webhook url', startedAt: now, finishedAt: now },
      );
      outcomes[status === null ? 'lease_lost' : 'dead']++;
      return;
    }
    // The receiver's gate, within what the lease leaves after a whole attempt.
    const origin = originOf(url);
    const waitMs = Math.max(0, claimedAt + LEASE_MS - opts.attemptTimeoutMs - 5_000 - clock.now());
    if (!(await receivers.acquire(origin, waitMs))) {
      await deliveriesRepository.release(db, d, clock.now() + BUSY_RECEIVER_DELAY_MS, clock.now());
      outcomes.deferred++;
      return;
    }
    // The receiver's place is given back as soon as its answer is in; recording the attempt does not hold it.
    let held = true;
    const leave = () => {
      if (held) receivers.release(origin);
      held = false;
    };
    try {
      await limit(() => send(d, url, target.secrets, target.format ?? 'standard', leave));
    } finally {
      leave();
    }
  }

  async function send(d: ClaimedDelivery, url: string, secrets: string[], format: SendTarget['format'], answered: () => void): Promise<void> {
    const startedAt = clock.now();
    const message = { event: d.event, data: d.data, sentAt: new Date(startedAt).toISOString() };
    const t = Math.floor(startedAt / 1000);
    // Slack and Discord (chat-formats.ts) get their own message shape and none of our headers: they ignore them, and
    // their webhook URL is itself the credential, so a signature would prove nothing to them.
    const chat = format === 'slack' ? slackMessage(message) : format === 'discord' ? discordMessage(message) : undefined;
    const body = JSON.stringify(chat ?? message);
    const result = await sendWebhook(
      {
        url,
        body,
        headers: chat
          ? { 'Content-Type': 'application/json', 'User-Agent': USER_AGENT }
          : {
              'Content-Type': 'application/json',
              'User-Agent': USER_AGENT,
              [SIGNATURE_HEADER]: signatureHeader(secrets, t, body),
              // Stable across retries and replays, so receivers can dedupe (Svix webhook-id, Stripe event id).
              'Service-Webhook-Id': d.id,
              'Idempotency-Key': d.id,
              'Service-Webhook-Event': d.event,
              'Service-Webhook-Attempt': String(d.attemptSeq),
            },
      },
      { timeoutMs: opts.attemptTimeoutMs, guard: platform.outbound, agents },
    );
    answered();
    const finishedAt = clock.now();
    const nextAttemptAt = result.ok ? undefined : finishedAt + nextDelayMs(d.attempts + 1, result.status, result.retryAfter, finishedAt, opts.random);
    const status = await recorder.record(d, { ok: result.ok, status: result.status, error: result.error, startedAt, finishedAt, nextAttemptAt });
    outcomes[status === null ? 'lease_lost' : status === 'pending' ? 'retrying' : status]++;
    if (status === null) log.warn({ deliveryId: d.id }, 'lease lost before the attempt was recorded; another processor owns the delivery');
    else if (status === 'dead') log.warn({ deliveryId: d.id, error: result.error }, 'webhook delivery dead-lettered');
  }

  return {
    outcomes,
    async attemptAll(claimed, claimedAt) {
      const targets = new Map<string, Promise<SendTarget>>();
      await Promise.all(
        claimed.map((d) =>
          attempt(d, targets, claimedAt).catch((err) => {
            // Infrastructure failure (database): the lease runs out and the sweep retries the delivery.
            log.error({ err, deliveryId: d.id }, 'webhook attempt could not be recorded');
          }),
        ),
      );
    },
    close: () => agents.destroy(),
  };
}

/** A receiver's origin (`https://host:port`), for its gate; a URL that does not parse is its own. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** A small concurrency gate: at most `max` tasks run at once. */
function createLimiter(max: number) {
  let active = 0;
  const queue: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
