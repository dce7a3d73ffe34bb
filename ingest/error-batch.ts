import { parseBoundedJson } from '../platform/bounded-json.ts';
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { encodeErrorBatchEnvelope, type EnvelopeRoom } from '../schemas/bus/error-events.ts';
import { ErrorBatchSchema } from '../schemas/error-event.ts';

/**
 * The edge's pure part: parse, validate, wrap. No I/O, so it is unit-tested alone and benchmarked
 * as the validation path. The accepted body travels on as the client sent it, inside a stamped
 * envelope (event ids, receive time, project, origin host; see schemas/error-event.ts); the
 * processor cuts fields to size and stamps each event from it.
 */
export type BatchOutcome =
  | { ok: true; events: number; value: Buffer }
  | { ok: false; reason: 'invalid_json' | 'invalid_request'; message: string; fields?: Array<{ path: string; message: string }> };

export interface StampContext {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  /** Used when an event names no runtime: `browser` when the request carried an Origin header. */
  defaultRuntime: 'browser' | 'node';
  /** The request's User-Agent, cut (userAgentOf); the envelope carries it for the processor's contexts (issue 40). */
  userAgent?: string;
}

/** `room`: the buffer `body` was read into with space around it, so the envelope is built in place. */
export function parseErrorBatch(body: Buffer, ctx: StampContext, room?: EnvelopeRoom): BatchOutcome {
  // JSON is UTF-8 (RFC 8259): bytes that are not are refused, not replaced with U+FFFD (the API's rule too).
  if (!isUtf8(body)) return { ok: false, reason: 'invalid_request', message: 'body is not valid UTF-8' };
  const bounded = parseBoundedJson(body.toString('utf8'));
  if (!bounded.ok)
    return bounded.reason === 'too_deep'
      ? { ok: false, reason: 'invalid_request', message: `body is ${bounded.message}` }
      : { ok: false, reason: 'invalid_json', message: 'body is not valid JSON' };
  const json = bounded.value;
  const parsed = ErrorBatchSchema.safeParse(json);
  if (!parsed.success) {
    const fields = parsed.error.issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message }));
    return { ok: false, reason: 'invalid_request', message: `invalid error batch: ${fields.map((f) => f.path).join(', ')}`, fields };
  }
  const n = parsed.data.batch.length;
  const eventIds = new Array<string>(n);
  for (let i = 0; i < n; i++) eventIds[i] = randomUUID();
  return { ok: true, events: n, value: encodeErrorBatchEnvelope({ ...ctx, eventIds }, body, room) };
}
