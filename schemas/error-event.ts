import { z } from 'zod';
import { LIMITS } from './limits.ts';


/**
 * Error event, ingest input (spec §2.5). Over-long name/message/stack are cut, not refused
 * (the edge records which fields were cut in `truncated`). `environment` is accepted and ignored:
 * the server stamps it (§7.4).
 */
const optionalString = z.string().max(2048).optional();

export const ErrorEventSchema = z.object({
  name: z.string().optional(),
  message: z.string({ error: 'message is required and must be a string' }),
  stack: z.string().optional(),
  path: optionalString,
  distinctId: z.string().max(256).optional(),
  userId: z.string().max(256).optional(),
  sessionId: z.string().max(256).optional(),
  deployId: z.string().max(256).optional(),
  gitSha: z.string().max(64).optional(),
  environment: z.unknown().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
  /** Client time: epoch milliseconds or an ISO-8601 string (the spec leaves the format open). */
  timestamp: z.union([z.number().finite(), z.string().max(64)]).optional(),
  runtime: z.enum(['browser', 'node']).optional(),
});
export type ErrorEvent = z.infer<typeof ErrorEventSchema>;

export const ErrorBatchSchema = z.object({
  batch: z.array(ErrorEventSchema).min(LIMITS.errorBatch.minEvents).max(LIMITS.errorBatch.maxEvents),
});
export type ErrorBatch = z.infer<typeof ErrorBatchSchema>;

export const ENVIRONMENTS = ['production', 'preview', 'unknown'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** One event as the edge puts it on the bus: validated, cut to size, stamped. */
export interface StampedErrorEvent {
  eventId: string;
  name: string;
  message: string;
  stack: string;
  path?: string;
  distinctId?: string;
  userId?: string;
  sessionId?: string;
  deployId?: string;
  gitSha?: string;
  extra?: Record<string, unknown>;
  /** Client timestamp, normalised to epoch ms when it parses. */
  clientTime?: number;
  runtime: 'browser' | 'node';
  /** Fields the edge cut to their limit. */
  truncated: Array<'name' | 'message' | 'stack'>;
}

/** One accepted batch as the pipeline sees it: every event stamped. */
export interface ErrorBatchMessage {
  v: 1;
  projectId: string;
  /**
   * Host of the request's Origin header, with `:port` unless the port is 443 (ingest/origin-policy.ts;
   * older edges sent the bare hostname, which still decodes and matches); null for server-to-server posts.
   */
  originHost: string | null;
  /** Epoch ms at the edge. */
  receivedAt: number;
  events: StampedErrorEvent[];
}

/**
 * On the bus (topic TOPICS.errorEvents, key projectId) a batch travels as one of two versions:
 *
 * - v2, what the edge sends: a small stamped envelope around the client's own bytes,
 *   `{"v":2,"projectId":..,"originHost":..,"receivedAt":..,"defaultRuntime":..,"eventIds":[..],"body":<raw body>}`.
 *   The edge validated the body, so it is valid JSON; splicing the raw bytes in spares the edge
 *   re-serialising every event (JSON-escaping long stacks was its largest single cost). The consumer
 *   stamps the events with the same pure function the edge would have used.
 * - v1, an ErrorBatchMessage with stamped events, for producers that build events themselves.
 */
export interface ErrorBatchEnvelopeHeader {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  /** Runtime of events that name none: `browser` when the request carried an Origin. */
  defaultRuntime: 'browser' | 'node';
  /** One id per event of the body, in order. */
  eventIds: string[];
}

export function encodeErrorBatchEnvelope(h: ErrorBatchEnvelopeHeader, rawBody: Buffer, room?: EnvelopeRoom): Buffer {
  const head =
    `{"v":2,"projectId":${JSON.stringify(h.projectId)},"originHost":${JSON.stringify(h.originHost)},` +
    `"receivedAt":${h.receivedAt},"defaultRuntime":"${h.defaultRuntime}","eventIds":${JSON.stringify(h.eventIds)},"body":`;
  if (room && rawBody.buffer === room.buf.buffer && rawBody.byteOffset === room.buf.byteOffset + room.start) {
    const headLength = Buffer.byteLength(head);
    const end = room.start + rawBody.length;
    if (headLength <= room.start && end < room.buf.length) {
      const from = room.start - headLength;
      room.buf.write(head, from, 'utf8');
      room.buf[end] = CLOSE_BRACE[0]!;
      return room.buf.subarray(from, end + 1);
    }
  }
  return Buffer.concat([Buffer.from(head), rawBody, CLOSE_BRACE]);
}

/**
 * A buffer that holds a body at `start` with free bytes before it (at least ENVELOPE_HEAD_ROOM) and one
 * after: the edge reads bodies into one, and the envelope's head and closing brace are then written around
 * the body in place instead of copying it into a new buffer.
 */
export interface EnvelopeRoom {
  buf: Buffer;
  start: number;
}
/** Room for the head: ids of up to 20 events, the project and the origin host fit with margin. */
export const ENVELOPE_HEAD_ROOM = 1536;
const CLOSE_BRACE = Buffer.from('}');

/** Decode either version into stamped events; undefined for a message that is neither (logged and skipped by the consumer). */
export function decodeErrorBatchMessage(value: Buffer): ErrorBatchMessage | undefined {
  let m: Record<string, unknown>;
  try {
    const text = value.toString('utf8');
    m = JSON.parse(text);
    // JSON can carry NUL and lone UTF-16 surrogates (as \u0000 and \ud800..\udfff escapes, the only way it
    // may); Postgres text and jsonb cannot, and one such event would fail its batch on every delivery.
    // Each becomes U+FFFD, in keys and values alike.
    if (UNSTORABLE_ESCAPE.test(text)) m = storableText(m) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!m || typeof m.projectId !== 'string' || !isTime(m.receivedAt)) return undefined;
  const originHost = typeof m.originHost === 'string' ? m.originHost : null;
  if (m.v === 2) {
    const body = ErrorBatchSchema.safeParse(m.body);
    const ids = m.eventIds;
    if (!body.success || !Array.isArray(ids) || ids.length !== body.data.batch.length) return undefined;
    const runtime = m.defaultRuntime === 'browser' ? 'browser' : 'node';
    const events = body.data.batch.map((e, i) => stampErrorEvent(e, String(ids[i]), runtime));
    return { v: 1, projectId: m.projectId, originHost, receivedAt: m.receivedAt, events };
  }
  if (m.v === 1 && Array.isArray(m.events)) {
    // Built by another producer: each event is checked like the edge checks a body; one that fails is skipped.
    const events: StampedErrorEvent[] = [];
    for (const e of m.events) {
      const r = StampedErrorEventSchema.safeParse(e);
      if (r.success) events.push(withoutUndefined(r.data) as StampedErrorEvent);
    }
    return { v: 1, projectId: m.projectId, originHost, receivedAt: m.receivedAt, events };
  }
  return undefined;
}

const F = LIMITS.errorFields;

/**
 * Stamp one validated event: cut name/message/stack to their limits (listing what was cut, not
 * refusing it), default the name and runtime, drop `environment` (the processor stamps it, §7.4),
 * normalise the client timestamp to epoch ms.
 */
export function stampErrorEvent(e: ErrorEvent, eventId: string, defaultRuntime: 'browser' | 'node'): StampedErrorEvent {
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
  const out: StampedErrorEvent = { eventId, name, message, stack, runtime: e.runtime ?? defaultRuntime, truncated };
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

/**
 * Client time as epoch ms, or undefined when it is not a time every store can hold (isTime): the client's
 * clock is informational, so a value out of range is dropped, not refused.
 */
function normaliseTime(t: number | string | undefined): number | undefined {
  if (t === undefined) return undefined;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  return isTime(ms) ? ms : undefined;
}

/**
 * A number of epoch ms that every store can hold: from 1900-01-01 to the end of 2299 (ClickHouse
 * DateTime64's range; a Date holds more, and a time beyond it would fail the occurrence insert on every
 * delivery).
 */
export function isTime(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= MIN_TIME_MS && ms < MAX_TIME_MS;
}
const MIN_TIME_MS = Date.UTC(1900, 0, 1);
const MAX_TIME_MS = Date.UTC(2300, 0, 1);

/** A stamped event from another producer (envelope v1), checked before the pipeline trusts its fields. */
const StampedErrorEventSchema = z.object({
  // An id, not a document: bounded well under what a btree index row holds.
  eventId: z.string().min(1).max(128),
  // name, stack, runtime and truncated may be left out: the pipeline fills them in (withDefaults).
  name: z.string().optional(),
  message: z.string(),
  stack: z.string().optional(),
  path: z.string().optional(),
  distinctId: z.string().optional(),
  userId: z.string().optional(),
  sessionId: z.string().optional(),
  deployId: z.string().optional(),
  gitSha: z.string().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
  // Out of range: dropped, as the edge drops it.
  clientTime: z.unknown().optional().transform((t) => (isTime(t) ? t : undefined)),
  runtime: z.enum(['browser', 'node']).optional(),
  truncated: z.array(z.enum(['name', 'message', 'stack'])).optional(),
});

/** A JSON escape that may decode to text Postgres cannot store: NUL, or a surrogate (paired or not). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/**
 * `value` with text Postgres can store: every NUL and every lone UTF-16 surrogate in its strings and keys
 * replaced by U+FFFD (surrogate pairs, such as emoji, stay).
 */
export function storableText(value: unknown): unknown {
  if (typeof value === 'string') {
    const s = value.isWellFormed() ? value : value.toWellFormed();
    return s.includes('\u0000') ? s.replaceAll('\u0000', '\uFFFD') : s;
  }
  if (Array.isArray(value)) return value.map(storableText);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, storableText(k) as string, storableText(v));
    return out;
  }
  return value;
}

/** `o[key] = value` as an own property, also for the key `__proto__` (which JSON.parse makes an own key). */
export function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  else o[key] = value;
}

function withoutUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as Array<keyof T>) if (o[k] === undefined) delete o[k];
  return o;
}
