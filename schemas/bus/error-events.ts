import {
  ErrorBatchSchema,
  isTime,
  stampErrorEvent,
  StampedErrorEventSchema,
  userAgentOf,
  type StampedErrorBatch,
  type StampedErrorEvent,
} from '../error-event.ts';
import { storableText, UNSTORABLE_ESCAPE } from '../storable-text.ts';
import { TOPICS } from '../topics.ts';

/**
 * How an error batch travels on the bus as bytes (key projectId), in one of two
 * versions:
 *
 * - v2, what the edge sends: a small stamped envelope around the client's own bytes,
 *   `{"v":2,"projectId":..,"originHost":..,"receivedAt":..,"defaultRuntime":..,"eventIds":[..],"body":<raw body>}`,
 *   with `"userAgent":..` before `"eventIds"` when the request had one (issue 40; edges before it send none).
 *   The edge validated the body, so it is valid JSON; splicing the raw bytes in spares the edge
 *   re-serialising every event (JSON-escaping long stacks was its largest single cost). The consumer
 *   stamps the events with the same pure function the edge would have used.
 * - v1, `{"v":1, ...StampedErrorBatch}` with stamped events, for producers that build events themselves
 *   (and for replaying events set aside as unprocessable).
 */
export const TOPIC = TOPICS.errorEvents;

export interface ErrorBatchEnvelopeHeader {
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  /** Runtime of events that name none: `browser` when the request carried an Origin. */
  defaultRuntime: 'browser' | 'node';
  /** One id per event of the body, in order. */
  eventIds: string[];
  /** The request's User-Agent (cut by userAgentOf), when it had one. */
  userAgent?: string;
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
/** Room for the head: ids of up to 20 events, the project, the origin host and a User-Agent (512 characters) fit with margin. */
export const ENVELOPE_HEAD_ROOM = 3072;
const CLOSE_BRACE = Buffer.from('}');

/** The edge's v2 envelope around a validated raw body; in place when the body sits in a room with space. */
export function encodeErrorBatchEnvelope(h: ErrorBatchEnvelopeHeader, rawBody: Buffer, room?: EnvelopeRoom): Buffer {
  const head =
    `{"v":2,"projectId":${JSON.stringify(h.projectId)},"originHost":${JSON.stringify(h.originHost)},` +
    `"receivedAt":${h.receivedAt},"defaultRuntime":"${h.defaultRuntime}",${h.userAgent === undefined ? '' : `"userAgent":${JSON.stringify(h.userAgent)},`}` +
    `"eventIds":${JSON.stringify(h.eventIds)},"body":`;
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

/** A batch of already stamped events as a v1 message. */
export function encodeErrorBatchV1(batch: StampedErrorBatch): Buffer {
  return Buffer.from(
    JSON.stringify({
      v: 1,
      projectId: batch.projectId,
      originHost: batch.originHost,
      receivedAt: batch.receivedAt,
      userAgent: batch.userAgent,
      events: batch.events,
    }),
  );
}

/**
 * Decode either version into stamped events; undefined for a message that is neither (the consumer counts
 * it as invalid_message). An event of a v1 message that fails the checks is left out and reported through
 * `onInvalidEvent`.
 */
export function decodeErrorBatch(value: Buffer, onInvalidEvent?: () => void): StampedErrorBatch | undefined {
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
  const userAgent = userAgentOf(m.userAgent);
  if (m.v === 2) {
    const body = ErrorBatchSchema.safeParse(m.body);
    const ids = m.eventIds;
    if (!body.success || !Array.isArray(ids) || ids.length !== body.data.batch.length) return undefined;
    const runtime = m.defaultRuntime === 'browser' ? 'browser' : 'node';
    const events = body.data.batch.map((e, i) => stampErrorEvent(e, String(ids[i]), runtime));
    return userAgent === undefined
      ? { projectId: m.projectId, originHost, receivedAt: m.receivedAt, events }
      : { projectId: m.projectId, originHost, receivedAt: m.receivedAt, userAgent, events };
  }
  if (m.v === 1 && Array.isArray(m.events)) {
    // Built by another producer: each event is checked like the edge checks a body; one that fails is left out.
    const events: StampedErrorEvent[] = [];
    for (const e of m.events) {
      const r = StampedErrorEventSchema.safeParse(e);
      if (r.success) events.push(withDefaults(r.data));
      else onInvalidEvent?.();
    }
    return userAgent === undefined
      ? { projectId: m.projectId, originHost, receivedAt: m.receivedAt, events }
      : { projectId: m.projectId, originHost, receivedAt: m.receivedAt, userAgent, events };
  }
  return undefined;
}

/** A checked v1 event with what the edge would have filled in (name, stack, runtime, truncated) and no undefined keys. */
function withDefaults(e: ReturnType<typeof StampedErrorEventSchema.parse>): StampedErrorEvent {
  const out = { ...e, name: e.name || 'Error', stack: e.stack ?? '', runtime: e.runtime ?? 'browser', truncated: e.truncated ?? [] } as Record<string, unknown>;
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out as unknown as StampedErrorEvent;
}

/** The uniform names of a bus module (schemas/bus/README.md). */
export const decode = decodeErrorBatch;
