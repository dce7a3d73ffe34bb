import { randomUUID } from 'node:crypto';
import { ErrorBatchSchema, type ErrorBatchMessage, type ErrorEvent, type StampedErrorEvent } from '../schemas/error-event.ts';
import { LIMITS } from '../schemas/limits.ts';

/**
 * The edge's pure part: parse, validate, cut to size, stamp. No I/O, so it is unit-tested alone
 * and benchmarked as the validation path.
 */
export type BatchOutcome =
  | { ok: true; message: ErrorBatchMessage }
  | { ok: false; reason: 'invalid_json' | 'invalid_request'; message: string; fields?: Array<{ path: string; message: string }> };

export interface StampContext {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  /** Used when an event names no runtime: `browser` when the request carried an Origin header. */
  defaultRuntime: 'browser' | 'node';
}

const F = LIMITS.errorFields;

export function parseErrorBatch(body: Buffer, ctx: StampContext): BatchOutcome {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return { ok: false, reason: 'invalid_json', message: 'body is not valid JSON' };
  }
  const parsed = ErrorBatchSchema.safeParse(json);
  if (!parsed.success) {
    const fields = parsed.error.issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message }));
    return { ok: false, reason: 'invalid_request', message: `invalid error batch: ${fields.map((f) => f.path).join(', ')}`, fields };
  }
  const events = parsed.data.batch.map((e) => stamp(e, ctx));
  return { ok: true, message: { v: 1, projectId: ctx.projectId, originHost: ctx.originHost, receivedAt: ctx.receivedAt, events } };
}

function stamp(e: ErrorEvent, ctx: StampContext): StampedErrorEvent {
  const truncated: StampedErrorEvent['truncated'] = [];
  let name = e.name || 'Error';
  let message = e.message;
  let stack = e.stack ?? '';
  if (name.length > F.name) {
    name = name.slice(0, F.name);
    truncated.push('name');
  }
  if (message.length > F.message) {
    message = message.slice(0, F.message);
    truncated.push('message');
  }
  if (stack.length > F.stack) {
    stack = stack.slice(0, F.stack);
    truncated.push('stack');
  }
  // `environment` is dropped here on purpose: the processor stamps it (§7.4).
  const out: StampedErrorEvent = { eventId: randomUUID(), name, message, stack, runtime: e.runtime ?? ctx.defaultRuntime, truncated };
  if (e.path !== undefined) out.path = e.path;
  if (e.distinctId !== undefined) out.distinctId = e.distinctId;
  if (e.userId !== undefined) out.userId = e.userId;
  if (e.sessionId !== undefined) out.sessionId = e.sessionId;
  if (e.deployId !== undefined) out.deployId = e.deployId;
  if (e.gitSha !== undefined) out.gitSha = e.gitSha;
  if (e.extra !== undefined) out.extra = e.extra;
  const clientTime = normaliseTime(e.timestamp);
  if (clientTime !== undefined) out.clientTime = clientTime;
  return out;
}

function normaliseTime(t: number | string | undefined): number | undefined {
  if (t === undefined) return undefined;
  if (typeof t === 'number') return t;
  const ms = Date.parse(t);
  return Number.isFinite(ms) ? ms : undefined;
}
