import { describe, expect, it } from 'vitest';
import { ERROR_EVENT_TEXT_FIELD_NAMES, stampErrorEvent, type StampedErrorBatch } from '../error-event.ts';
import { LIMITS } from '../limits.ts';
import { decodeErrorBatch as decodeErrorBatchMessage, encodeErrorBatchEnvelope, encodeErrorBatchV1, ENVELOPE_HEAD_ROOM } from './error-events.ts';

const header = { projectId: 'prj_1', originHost: 'app.example.com', receivedAt: 1_700_000_000_000, defaultRuntime: 'browser' as const };

describe('error batch on the bus', () => {
  it('carries the client body verbatim inside the envelope and decodes it into stamped events', () => {
    const raw = Buffer.from(
      '{"batch":[{"message":"a\\nb \\u00e9","stack":"x","environment":"production","timestamp":"2026-01-01T00:00:00Z"},{"name":"TypeError","message":"b","runtime":"node"}]}',
    );
    const value = encodeErrorBatchEnvelope({ ...header, eventIds: ['e1', 'e2'] }, raw);
    expect(value.includes(raw)).toBe(true);
    const m = decodeErrorBatchMessage(value)!;
    expect(m).toMatchObject({ projectId: 'prj_1', originHost: 'app.example.com', receivedAt: header.receivedAt });
    expect(m.events[0]).toEqual({
      eventId: 'e1',
      name: 'Error',
      message: 'a\nb é',
      stack: 'x',
      runtime: 'browser',
      truncated: [],
      clientTime: Date.UTC(2026, 0, 1),
      // The client's environment is kept to read, never as the event's (§7.4).
      context: { clientEnvironment: 'production' },
    });
    expect(m.events[1]).toMatchObject({ eventId: 'e2', name: 'TypeError', runtime: 'node' });
    expect(m.events[0]).not.toHaveProperty('environment');
    expect(m).not.toHaveProperty('userAgent');
  });

  it('carries the request User-Agent in the envelope head (v2) and in a v1 message, cut to its limit', () => {
    const raw = Buffer.from('{"batch":[{"message":"a"}]}');
    const ua = 'Mozilla/5.0 "quoted" é';
    expect(decodeErrorBatchMessage(encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'], userAgent: ua }, raw))!.userAgent).toBe(ua);
    const room = { buf: Buffer.alloc(ENVELOPE_HEAD_ROOM + raw.length + 1), start: ENVELOPE_HEAD_ROOM };
    raw.copy(room.buf, room.start);
    const long = 'U'.repeat(LIMITS.errorContext.userAgent);
    const inPlace = encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'], userAgent: long }, room.buf.subarray(room.start, room.start + raw.length), room);
    expect(inPlace.buffer).toBe(room.buf.buffer);
    expect(decodeErrorBatchMessage(inPlace)!.userAgent).toBe(long);
    const v1: StampedErrorBatch = { projectId: 'p', originHost: null, receivedAt: 1, userAgent: 'x'.repeat(5000), events: [] };
    expect(decodeErrorBatchMessage(encodeErrorBatchV1(v1))!.userAgent).toBe('x'.repeat(LIMITS.errorContext.userAgent));
  });

  it('refuses an envelope whose ids do not match its events, and anything that is not a batch', () => {
    const raw = Buffer.from('{"batch":[{"message":"a"}]}');
    expect(decodeErrorBatchMessage(encodeErrorBatchEnvelope({ ...header, eventIds: [] }, raw))).toBeUndefined();
    expect(decodeErrorBatchMessage(Buffer.from('not json'))).toBeUndefined();
    expect(decodeErrorBatchMessage(Buffer.from('{"v":3,"projectId":"p","receivedAt":1}'))).toBeUndefined();
  });

  it('still reads pre-stamped v1 messages, with every text field', () => {
    const fields = Object.fromEntries(ERROR_EVENT_TEXT_FIELD_NAMES.map((f) => [f, `${f}-value`]));
    const batch: StampedErrorBatch = { projectId: 'p', originHost: null, receivedAt: 1, events: [stampErrorEvent({ message: 'm', ...fields }, 'id1', 'node')] };
    expect(decodeErrorBatchMessage(encodeErrorBatchV1(batch))).toEqual(batch);
    expect(batch.events[0]).toMatchObject(fields);
  });

  it('cuts over-long fields to their limits and lists what was cut', () => {
    const F = LIMITS.errorFields;
    const e = stampErrorEvent({ name: 'n'.repeat(F.name + 1), message: 'm'.repeat(F.message + 5), stack: 's'.repeat(F.stack + 9) }, 'id', 'node');
    expect([e.name.length, e.message.length, e.stack.length]).toEqual([F.name, F.message, F.stack]);
    expect(e.truncated).toEqual(['name', 'message', 'stack']);
  });

  it('drops a client time outside what every store holds (1900 to 2299; the edge accepts any finite number), keeping the event', () => {
    for (const timestamp of [1e20, -1e20, 8.64e15, Date.UTC(2300, 0, 1), Date.UTC(1899, 11, 31), '+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z']) {
      const e = stampErrorEvent({ message: 'm', timestamp }, 'id', 'node');
      expect(e).not.toHaveProperty('clientTime');
    }
    expect(stampErrorEvent({ message: 'm', timestamp: Date.UTC(2299, 11, 31) }, 'id', 'node').clientTime).toBe(Date.UTC(2299, 11, 31));
    expect(stampErrorEvent({ message: 'm', timestamp: Date.UTC(1900, 0, 1) }, 'id', 'node').clientTime).toBe(Date.UTC(1900, 0, 1));
    expect(stampErrorEvent({ message: 'm', timestamp: 'not a date' }, 'id', 'node')).not.toHaveProperty('clientTime');
  });

  it('refuses a message whose receive time is not a time, and checks each event of a v1 message', () => {
    const raw = Buffer.from('{"batch":[{"message":"a"}]}');
    expect(decodeErrorBatchMessage(encodeErrorBatchEnvelope({ ...header, receivedAt: 1e20, eventIds: ['e1'] }, raw))).toBeUndefined();
    const good = stampErrorEvent({ message: 'm' }, 'ok', 'node');
    const v1 = {
      v: 1,
      projectId: 'p',
      originHost: null,
      receivedAt: 1,
      events: [
        good,
        { ...good, eventId: 'bad-stack', stack: 123 },
        { ...good, eventId: 'far-future', clientTime: 1e20 },
        { eventId: 'bare', message: 'm' },
        null,
      ],
    };
    let invalid = 0;
    const m = decodeErrorBatchMessage(Buffer.from(JSON.stringify(v1)), () => invalid++)!;
    expect(m.events.map((e) => e.eventId)).toEqual(['ok', 'far-future', 'bare']);
    expect(invalid).toBe(2);
    expect(m.events[1]).not.toHaveProperty('clientTime');
    // What the edge would have filled in.
    expect(m.events[2]).toEqual({ eventId: 'bare', name: 'Error', message: 'm', stack: '', runtime: 'browser', truncated: [] });
  });

  it('turns every NUL and lone surrogate (which Postgres cannot hold) into U+FFFD, in keys and values, v2 and v1 alike', () => {
    const raw = Buffer.from(
      '{"batch":[{"name":"A\\u0000","message":"m\\u0000","stack":"s","path":"/\\u0000","userId":"u\\u0000","extra":{"k\\u0000":["v\\u0000",{"x":"\\u0000"}]}}]}',
    );
    const m = decodeErrorBatchMessage(encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'] }, raw))!;
    expect(m.events[0]).toMatchObject({
      name: 'A\uFFFD',
      message: 'm\uFFFD',
      path: '/\uFFFD',
      userId: 'u\uFFFD',
      extra: { 'k\uFFFD': ['v\uFFFD', { x: '\uFFFD' }] },
    });
    const v1 = { v: 1, projectId: 'p', originHost: null, receivedAt: 1, events: [{ ...stampErrorEvent({ message: 'x\u0000y' }, 'id1', 'node') }] };
    expect(decodeErrorBatchMessage(Buffer.from(JSON.stringify(v1)))!.events[0]!.message).toBe('x\uFFFDy');
    expect(JSON.stringify(m)).not.toContain('\\u0000');
    // Lone surrogates too; a pair (an emoji) stays.
    const odd = Buffer.from('{"batch":[{"message":"a\\ud800b \\ud83d\\ude00","extra":{"\\udc00":"x"}}]}');
    const o = decodeErrorBatchMessage(encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'] }, odd))!;
    expect(o.events[0]).toMatchObject({ message: 'a\uFFFDb \u{1F600}', extra: { '\uFFFD': 'x' } });
  });

  it('writes the envelope around a body read into a buffer with room, with the same bytes as a copy would have', () => {
    const raw = Buffer.from('{"batch":[{"message":"in place"}]}');
    const room = { buf: Buffer.alloc(ENVELOPE_HEAD_ROOM + raw.length + 1, 0xee), start: ENVELOPE_HEAD_ROOM };
    raw.copy(room.buf, room.start);
    const body = room.buf.subarray(room.start, room.start + raw.length);
    const inPlace = encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'] }, body, room);
    expect(inPlace.buffer).toBe(room.buf.buffer);
    expect(inPlace.equals(encodeErrorBatchEnvelope({ ...header, eventIds: ['e1'] }, raw))).toBe(true);
    expect(decodeErrorBatchMessage(inPlace)!.events[0]!.message).toBe('in place');
    // A head longer than the room (an absurd origin host) falls back to a copy.
    const long = encodeErrorBatchEnvelope({ ...header, originHost: 'h'.repeat(ENVELOPE_HEAD_ROOM), eventIds: ['e1'] }, body, room);
    expect(long.buffer).not.toBe(room.buf.buffer);
    expect(decodeErrorBatchMessage(long)!.originHost).toBe('h'.repeat(ENVELOPE_HEAD_ROOM));
  });
});
