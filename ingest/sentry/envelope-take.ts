import { randomUUID } from 'node:crypto';
import type { RateHit } from '../../platform/ports/rate-limiter.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { BatchFeed, ItemsContext, ItemsFormat, ItemsTaken } from '../batch-route.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { sortEnvelope, type ItemKind, type SortedEnvelope } from './envelope-items.ts';
import { categoriesOfLimited, kindLimits, rateLimitsHeader, UNKEPT_LIMIT, type CategoryLimit } from './envelope-limits.ts';
import { errorEventsOfSentry, toBatch } from './sentry-batch.ts';
import { decompress } from './sentry-body.ts';
import { parseEnvelope } from './sentry-envelope.ts';

/**
 * `POST /api/:projectId/envelope/` at production volume (issue 40). Admission (batch-route.ts, admission.ts) has
 * checked the key, the DSN's project number, the origin, paused and the disk, and read the body (up to 20 MB); then:
 *   1. inflate it (off the event loop when large), up to 20 MB                  413 too_large_decompressed / 415 / 400
 *   2. parse the envelope (sentry-envelope.ts)                                  400 invalid_request
 *   3. sort its items by kind, each held to its own size (envelope-items.ts);  400 when not one item could be read
 *      attachments, client reports and the types never kept are counted and dropped
 *   4. limit each kind it holds, on its own (envelope-limits.ts): errors by the monthly cap and the error-ingest
 *      limits, sessions, check-ins and feedback by theirs; client reports never
 *   5. what was let through: events as one errors message (exactly as today), sessions, aggregates, feedback and
 *      check-ins as one client-items message (schemas/bus/client-items.ts); batch-route.ts publishes both before the answer
 *   6. answer 200 `{ id }` when any kind was let through, 429 when every kind it held was limited; either way
 *      `X-Sentry-Rate-Limits` names the limited kinds' categories and the never-kept ones (envelope-limits.ts)
 */
const S = LIMITS.sentryIngest;
const RATE_LIMITS_HEADER = 'X-Sentry-Rate-Limits';

interface KindDecision {
  kind: ItemKind;
  allowed: boolean;
  limit?: CategoryLimit;
  /** The cap's refusal, when that is what stopped the errors. */
  capped?: Refusal;
}

export function envelopeItems(deps: { errors: BatchFeed; publishItems(m: { key: string; value: Buffer }): Promise<void> }): ItemsFormat {
  return {
    async take(read, ctx) {
      // 1. inflate
      const body = await decompress(read.body, ctx.contentEncoding, S.maxDecompressedBytes, ctx.reserve);
      if (!Buffer.isBuffer(body)) return body;

      // 2. parse
      const envelope = parseEnvelope(body);
      if (!envelope.ok) return refusal('invalid_request', envelope.message);

      // 3. sort
      const sorted = sortEnvelope(envelope.header, envelope.items, { receivedAt: ctx.receivedAt, newId: randomUUID });
      if (sorted.invalid > 0 && sorted.invalid === envelope.items.length)
        return refusal(
          'invalid_request',
          `no item of the envelope could be read (${sorted.invalid} not valid: ${Object.keys(sorted.dropped).join(', ')})${sorted.problem ? `: ${sorted.problem}` : ''}`,
        );

      // 4. limits, kind by kind
      let decisions: KindDecision[];
      try {
        decisions = await Promise.all([...sorted.kinds.keys()].map((kind) => decide(kind, sorted, ctx, deps.errors)));
      } catch {
        return refusal('limiter_unavailable', 'ingest is temporarily unavailable, retry later');
      }
      const limited = decisions.filter((d) => !d.allowed);
      const header = rateLimitsHeader([...limited.map((d) => d.limit!), UNKEPT_LIMIT]);
      if (limited.length && limited.length === decisions.length) return allLimited(limited, header);

      // 5. what was let through, as bus messages
      const allowed = new Set(decisions.filter((d) => d.allowed).map((d) => d.kind));
      for (const d of limited) sorted.dropped[d.capped ? `capped_${d.kind}` : `limited_${d.kind}`] = 1;
      const messages = messagesOf(sorted, allowed, ctx, deps);
      if ('reason' in messages) return messages;

      // 6. answer
      return {
        publish: messages.publish,
        events: messages.events,
        dropped: sorted.dropped,
        reply: { status: 200, body: JSON.stringify({ id: sorted.ids[0] ?? null }), headers: [[RATE_LIMITS_HEADER, header]] },
      };
    },
  };
}

async function decide(kind: ItemKind, sorted: SortedEnvelope, ctx: ItemsContext, errors: BatchFeed): Promise<KindDecision> {
  const categories = categoriesOfLimited(kind, sorted.kinds.get(kind) ?? []);
  if (kind === 'errors') {
    const capped = ctx.cap();
    if (capped)
      return { kind, allowed: false, capped, limit: { retryAfterSec: capped.retryAfterSec ?? 60, categories, scope: 'project', reason: 'usage_exceeded' } };
  }
  const hits: RateHit[] = kind === 'errors' ? errors.rateLimits(ctx.keyId, ctx.ip) : kindLimits(kind, ctx.keyId, ctx.ip);
  const refused = (await ctx.hitAll(hits)).filter((d) => !d.allowed);
  if (!refused.length) return { kind, allowed: true };
  return {
    kind,
    allowed: false,
    limit: { retryAfterSec: Math.max(1, ...refused.map((d) => d.retryAfterSec)), categories, scope: 'key', reason: 'rate_limited' },
  };
}

/** 429: the cap's own refusal when the cap alone stopped it (errors_capped), else rate_limited; the header names each kind. */
function allLimited(limited: KindDecision[], header: string): Refusal {
  const retryAfterSec = Math.max(...limited.map((d) => d.limit!.retryAfterSec));
  const headers: [string, string][] = [[RATE_LIMITS_HEADER, header]];
  if (limited.every((d) => d.capped)) return { ...limited[0]!.capped!, retryAfterSec, headers };
  return refusal('rate_limited', `too many requests for this ingest key (${limited.map((d) => d.kind).join(', ')})`, { retryAfterSec, headers });
}

function messagesOf(
  sorted: SortedEnvelope,
  allowed: Set<ItemKind>,
  ctx: ItemsContext,
  deps: Parameters<typeof envelopeItems>[0],
): Pick<ItemsTaken, 'publish' | 'events'> | Refusal {
  const publish: ItemsTaken['publish'] = [];
  let events = 0;
  if (allowed.has('errors') && sorted.events.length) {
    const batch = toBatch(errorEventsOfSentry(sorted.events, sorted.dropped), sorted.ids, sorted.dropped, ctx);
    if ('reason' in batch) {
      if (allowed.size === 1) return batch;
      sorted.dropped.invalid_event = (sorted.dropped.invalid_event ?? 0) + sorted.events.length;
    } else if (batch.events > 0) {
      events += batch.events;
      publish.push(() => deps.errors.publish({ key: ctx.projectId, value: batch.value }));
    }
  }
  const message: clientItems.ClientItemsMessage = {
    v: 1,
    batchId: randomUUID(),
    projectId: ctx.projectId,
    originHost: ctx.originHost,
    receivedAt: ctx.receivedAt,
  };
  if (ctx.userAgent) message.userAgent = ctx.userAgent.slice(0, 512);
  if (allowed.has('sessions') && sorted.sessions.length) message.sessions = sorted.sessions;
  if (allowed.has('sessions') && sorted.sessionAggregates.length) message.sessionAggregates = sorted.sessionAggregates;
  if (allowed.has('feedback') && sorted.feedback.length) message.feedback = sorted.feedback;
  if (allowed.has('monitors') && sorted.checkIns.length) message.checkIns = sorted.checkIns;
  const items = (message.sessions?.length ?? 0) + (message.sessionAggregates?.length ?? 0) + (message.feedback?.length ?? 0) + (message.checkIns?.length ?? 0);
  if (items) {
    const value = clientItems.encode(message);
    events += items;
    publish.push(() => deps.publishItems({ key: ctx.projectId, value }));
  }
  return { publish, events };
}
