import type uWS from 'uWebSockets.js';
import { STATUS_CODES } from 'node:http';
import type { FileHandle } from 'node:fs/promises';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '../../schemas/error-codes.ts';
import { ENVELOPE_HEAD_ROOM, type EnvelopeRoom } from '../../schemas/bus/error-events.ts';

/**
 * The uWS plumbing every edge route shares. uWS's rules, kept here once: a response is touched only while
 * not aborted and only once; every write after an await is corked; request headers are copied before any
 * await (HttpRequest dies with the handler's stack).
 */
export type Headers = Array<[string, string]>;

export interface ReplyState {
  aborted: boolean;
  /** A HEAD request: the answer reports its body's length and sends no body (any body would corrupt the connection). */
  head?: boolean;
  /** Answered: nothing more may be written. */
  done: boolean;
  /** Set while a body is being read, so an abort settles the read. */
  onAbortRead?: () => void;
  /** Told the status when the answer goes out (timedReply). */
  answered?: (status: number) => void;
}

/** Told each timed answer: the route (its registered path), the status, and the seconds since the request arrived. */
export type AnswerObserver = (route: string, status: number, seconds: number) => void;

/** Times `st`'s answer for `observe` (the edge's latency histogram, platform/ops/metrics.ts); `st` unchanged without one. */
export function timedReply(st: ReplyState, route: string, observe: AnswerObserver | undefined): ReplyState {
  if (observe) {
    const t0 = performance.now();
    st.answered = (status) => observe(route, status, (performance.now() - t0) / 1000);
  }
  return st;
}

/** A reply that notices the client going away (needed by any route that answers after an await). */
export function watchedReply(res: uWS.HttpResponse, req?: uWS.HttpRequest): ReplyState {
  const st: ReplyState = { aborted: false, done: false, head: isHead(req) };
  res.onAborted(() => {
    st.aborted = true;
    st.onAbortRead?.();
  });
  return st;
}

/** A reply answered before any await: no abort handler needed. */
export function immediateReply(req?: uWS.HttpRequest): ReplyState {
  return { aborted: false, done: false, head: isHead(req) };
}

/** Read with getCaseSensitiveMethod: uWS's getMethod() lower-cases the method in place, which the relay would forward. */
function isHead(req: uWS.HttpRequest | undefined): boolean {
  return req !== undefined && req.getCaseSensitiveMethod().toUpperCase() === 'HEAD';
}

const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (!line) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    statusLines.set(status, line);
  }
  return line;
}

/**
 * A HEAD answer (`st.head`) reports its body's length and sends none. uWS 20.30 takes `endWithoutBody(n)` with n > 0,
 * or with an explicit undefined, as no answer at all and aborts the process, so the length is written as a header
 * and the answer ended with no arguments.
 */
export function send(res: uWS.HttpResponse, st: ReplyState, status: number, headers: Headers, body?: string | Buffer, close = false): void {
  if (st.aborted || st.done) return;
  st.done = true;
  st.answered?.(status);
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [k, v] of headers) res.writeHeader(k, v);
    if (st.head && body !== undefined) {
      res.writeHeader('Content-Length', String(Buffer.byteLength(body)));
      res.endWithoutBody();
    } else if (body === undefined) res.endWithoutBody(0, close);
    else res.end(body, close);
  });
}

export interface ErrorExtra {
  retryAfterSec?: number;
  fields?: ErrorBody['fields'];
  /** Close the connection after the answer (a body that is not read to its end). */
  close?: boolean;
  /** Fields added beside `error` and `message`. */
  body?: Record<string, unknown>;
}

/** `{ error, message }` with the code's status (schemas/error-codes.ts); Retry-After when given. */
export function sendError(res: uWS.HttpResponse, st: ReplyState, code: ErrorCode, message: string, headers: Headers = [], extra: ErrorExtra = {}): void {
  const body: ErrorBody = { ...extra.body, error: code, message };
  if (extra.fields) body.fields = extra.fields;
  const h: Headers = [['Content-Type', 'application/json'], ...headers];
  if (extra.retryAfterSec !== undefined) h.push(['Retry-After', String(extra.retryAfterSec)]);
  send(res, st, ERROR_CODES[code], h, JSON.stringify(body), extra.close);
}

export interface ReadBody {
  body: Buffer;
  room?: EnvelopeRoom;
}

/**
 * Read the body as it streams in, refusing it (413, connection closed) the moment it passes `max`,
 * so a huge body is never read to its end. Resolves null when the request was answered or aborted.
 *
 * With a declared length (`room`), the body is read straight into one buffer with ENVELOPE_HEAD_ROOM
 * bytes before it and one after, so the bus envelope is written around it without another copy.
 *
 * `drain`: past `max`, the rest of the body is read and thrown away (up to `drain.bytes` more, for at most
 * `drain.ms`) before the refusal, because uWS closes a connection whose answer went out while its body was still
 * arriving: a client that writes its whole body before it reads (Python's urllib and requests, curl without
 * Expect, most webhook senders) then gets a broken pipe or a reset, never the 413. Past the drain's bounds, the
 * refusal goes out at once (and the connection is closed).
 */
export function readBody(
  res: uWS.HttpResponse,
  st: ReplyState,
  max: number,
  onTooLarge: () => void,
  declaredLength = 0,
  drain?: BodyDrain,
): Promise<ReadBody | null> {
  return new Promise((resolve) => {
    // uWS keeps the onData handler (and all it captures) until the connection's next request, often long
    // enough to be promoted to V8's old space: so the request's buffers and promise are reached only through
    // `r`, which is dropped once the body is settled, and they die young.
    let r: BodyRead | undefined = { resolve, chunks: [], total: 0, inRoom: 0, room: undefined };
    const settle = (value: ReadBody | null) => {
      const done = r?.resolve;
      r = undefined;
      st.onAbortRead = undefined;
      done?.(value);
    };
    let drained = -1;
    let drainTimer: NodeJS.Timeout | undefined;
    const refuse = () => {
      clearTimeout(drainTimer);
      onTooLarge();
      settle(null);
    };
    st.onAbortRead = () => {
      clearTimeout(drainTimer);
      settle(null);
    };
    res.onData((chunk, isLast) => {
      if (!r || st.done || st.aborted) return;
      const size = chunk.byteLength;
      if (drained >= 0) {
        drained += size;
        if (isLast || drained > drain!.bytes) refuse();
        return;
      }
      if (r.total + size > max) {
        if (!drain || isLast) return refuse();
        // Over the limit: nothing more is kept, the rest is read to its end (within the drain's bounds), then refused.
        r.chunks = [];
        r.room = undefined;
        drained = r.total + size - max;
        if (drained > drain.bytes) return refuse();
        drainTimer = setTimeout(refuse, drain.ms);
        drainTimer.unref();
        return;
      }
      // Allocated with the first bytes of the body, not on the headers alone: a client that declares 64 KB
      // and sends nothing holds no buffer.
      if (r.total === 0 && declaredLength > 0 && declaredLength <= max)
        r.room = { buf: Buffer.allocUnsafe(ENVELOPE_HEAD_ROOM + declaredLength + 1), start: ENVELOPE_HEAD_ROOM };
      const room = r.room;
      // uWS neuters the ArrayBuffer when this callback returns: copy it.
      if (room && !r.chunks.length && r.inRoom + size <= declaredLength) {
        room.buf.set(new Uint8Array(chunk), room.start + r.inRoom);
        r.inRoom += size;
      } else r.chunks.push(Buffer.from(new Uint8Array(chunk)));
      r.total += size;
      if (!isLast) return;
      const { chunks, total, inRoom } = r;
      if (room && !chunks.length) return settle({ body: room.buf.subarray(room.start, room.start + total), room });
      // No declared length, or a body that did not match it: one buffer of what arrived.
      const read = room && inRoom ? [room.buf.subarray(room.start, room.start + inRoom), ...chunks] : chunks;
      settle({ body: read.length === 1 ? read[0]! : Buffer.concat(read, total) });
    });
  });
}

/** How much of a refused body is still read (and thrown away) so that its client sees the refusal: bytes and time. */
export interface BodyDrain {
  bytes: number;
  ms: number;
}

/** A body being read: what the onData handler must not keep once the body is settled. */
interface BodyRead {
  resolve: (value: ReadBody | null) => void;
  chunks: Buffer[];
  total: number;
  inRoom: number;
  room: EnvelopeRoom | undefined;
}

/** The token of `Authorization: Bearer <token>`, or ''. */
export function bearer(authorization: string): string {
  if (authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ') return authorization.slice(7).trim();
  return '';
}

/** The caller's IP: the right-most X-Forwarded-For entry behind our own proxy, else the socket's address. */
export function clientIp(res: uWS.HttpResponse, forwardedFor: string, trustProxy: boolean): string {
  if (trustProxy && forwardedFor) {
    // The right-most entry is the one our own proxy appended; entries left of it are client-supplied.
    const parts = forwardedFor.split(',');
    const ip = parts[parts.length - 1].trim();
    if (ip) return ip;
  }
  return Buffer.from(res.getRemoteAddressAsText()).toString();
}

/**
 * Stream an open file as the answer, with backpressure: a chunk uWS cannot take now waits for onWritable, and the
 * file is read no faster than the client drains it, so a 1 GB file costs the same memory as a 10 KB one. The
 * handle is closed at the end, on an error and when the client goes away.
 */
export function sendFile(res: uWS.HttpResponse, st: ReplyState, status: number, headers: Headers, file: FileHandle, size: number, start = 0): void {
  if (st.aborted || st.done) {
    void file.close().catch(() => undefined);
    return;
  }
  if (st.head) {
    st.done = true;
    void file.close().catch(() => undefined);
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const [k, v] of headers) res.writeHeader(k, v);
      res.writeHeader('Content-Length', String(size));
      res.endWithoutBody();
    });
    return;
  }
  st.done = true;
  // `size` bytes from `start` (a Range's part), never past them.
  const stream = file.createReadStream({ highWaterMark: 64 * 1024, start, end: start + Math.max(size, 1) - 1 });
  const stop = () => stream.destroy();
  st.onAbortRead = stop;
  res.cork(() => {
    res.writeStatus(statusLine(status));
    for (const [k, v] of headers) res.writeHeader(k, v);
  });
  if (size === 0) {
    stop();
    if (!st.aborted) res.cork(() => res.end());
    return;
  }
  stream.on('error', () => {
    if (!st.aborted) res.close();
  });
  stream.on('data', (chunk) => {
    if (st.aborted) return stop();
    const buf = chunk as Buffer;
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;
    const offset = res.getWriteOffset();
    let ok = false;
    let done = false;
    res.cork(() => {
      [ok, done] = res.tryEnd(ab, size);
    });
    if (done) return stop();
    if (ok) return;
    stream.pause();
    res.onWritable((at) => {
      if (st.aborted) {
        stop();
        return true;
      }
      let ok2 = false;
      let done2 = false;
      res.cork(() => {
        [ok2, done2] = res.tryEnd(ab.slice(at - offset), size);
      });
      if (done2) stop();
      else if (ok2) stream.resume();
      return ok2;
    });
  });
}
