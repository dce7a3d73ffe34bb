import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../schemas/limits.ts';
import { openPostHogBody } from './posthog-body.ts';
import { eventOfPostHog } from './posthog-event.ts';

/** PostHog's wrappings opened, its events mapped, and hostile bodies refused with a reason (never a throw). */
const h = (over: Partial<{ contentType: string; contentEncoding: string; query: string }> = {}) => ({
  contentType: 'application/json',
  contentEncoding: '',
  query: '',
  ...over,
});
const body = { api_key: 'cak_live_a', batch: [{ event: 'e', distinct_id: 'u' }], sent_at: '2026-11-26T00:00:00.000Z' };

describe('opening a PostHog body', () => {
  it('reads JSON, gzip (by header, by ?compression=gzip-js, or by its bytes alone), deflate, and the data= form', () => {
    const json = Buffer.from(JSON.stringify(body));
    const b64 = Buffer.from(`data=${encodeURIComponent(json.toString('base64'))}`);
    for (const [raw, headers] of [
      [json, h()],
      [gzipSync(json), h({ contentEncoding: 'gzip' })],
      [gzipSync(json), h({ contentType: 'text/plain', query: 'compression=gzip-js&ver=1' })],
      [gzipSync(json), h({ contentType: 'text/plain' })],
      [deflateSync(json), h({ contentEncoding: 'deflate' })],
      [b64, h({ contentType: 'application/x-www-form-urlencoded', query: 'compression=base64' })],
      [Buffer.from(`data=${encodeURIComponent(JSON.stringify(body))}`), h({ contentType: 'application/x-www-form-urlencoded' })],
    ] as const) {
      const opened = openPostHogBody(raw, headers);
      expect(opened).toMatchObject({ token: 'cak_live_a', sentAt: Date.parse(body.sent_at) });
    }
  });

  it("finds the key in the body, its first event's properties, or the query", () => {
    const key = (json: unknown, query = '') => (openPostHogBody(Buffer.from(JSON.stringify(json)), h({ query })) as { token: string }).token;
    expect(key({ event: 'e', properties: { token: 'cak_live_p' } })).toBe('cak_live_p');
    expect(key([{ event: 'e', properties: { token: 'cak_live_q' } }])).toBe('cak_live_q');
    expect(key({ token: 'cak_live_t', distinct_id: 'u' })).toBe('cak_live_t');
    expect(key({ event: 'e' }, 'token=cak_live_z')).toBe('cak_live_z');
    expect(key({ event: 'e', properties: { token: 42 } })).toBe('');
  });

  it('refuses what it cannot open, each with a reason', () => {
    const reason = (raw: Buffer, headers = h()) => (openPostHogBody(raw, headers) as { reason?: string }).reason;
    expect(reason(Buffer.from('{"event":'))).toBe('invalid_request');
    expect(reason(Buffer.from([0xff, 0xfe, 0x00]))).toBe('invalid_request');
    expect(reason(Buffer.from('x'), h({ contentEncoding: 'gzip' }))).toBe('invalid_request');
    expect(reason(Buffer.from('{}'), h({ contentEncoding: 'zstd' }))).toBe('unsupported_encoding');
    expect(reason(Buffer.from('{}'), h({ query: 'compression=lz64' }))).toBe('unsupported_encoding');
    expect(reason(Buffer.from('data=%%%'), h({ contentType: 'application/x-www-form-urlencoded' }))).toBe('invalid_request');
    expect(reason(Buffer.from('nodata=1'), h({ contentType: 'application/x-www-form-urlencoded' }))).toBe('invalid_request');
  });

  it('refuses a gzip bomb once it inflates past the limit, and JSON nested past the depth bound, without a throw', () => {
    const bomb = gzipSync(Buffer.alloc(LIMITS.posthog.maxDecompressedBytes * 4, 0x20));
    expect(bomb.length).toBeLessThan(LIMITS.posthog.maxBodyBytes);
    expect(openPostHogBody(bomb, h({ contentType: 'text/plain' }))).toMatchObject({ reason: 'too_large_decompressed' });
    const deep = Buffer.from(`${'['.repeat(5_000)}${']'.repeat(5_000)}`);
    expect(openPostHogBody(gzipSync(deep), h({ contentEncoding: 'gzip' }))).toMatchObject({ reason: 'invalid_request' });
    const deepForm = Buffer.from(`data=${encodeURIComponent(deep.toString('base64'))}`);
    expect(openPostHogBody(deepForm, h({ contentType: 'application/x-www-form-urlencoded' }))).toMatchObject({ reason: 'invalid_request' });
  });
});

describe('a PostHog event as ours', () => {
  const received = Date.parse('2026-11-26T12:00:00.000Z');
  it('maps the fields, keeps $set as properties and drops the key', () => {
    const e = eventOfPostHog(
      {
        event: '$identify',
        distinct_id: 42,
        uuid: '0190a2b4-0000-7000-8000-000000000001',
        properties: { token: 'cak_live_a', distinct_id: 42, $session_id: 's1', $pathname: '/cart', plan: 'pro' },
        $set: { email: 'a@example.com' },
      },
      received,
      Number.NaN,
    );
    expect(e).toEqual({
      event: '$identify',
      distinctId: '42',
      uuid: '0190a2b4-0000-7000-8000-000000000001',
      sessionId: 's1',
      path: '/cart',
      properties: { $session_id: 's1', $pathname: '/cart', plan: 'pro', $set: { email: 'a@example.com' } },
    });
  });

  it("moves the time by the client's clock skew (sent_at against the receive time), or takes now - offset", () => {
    const at = (raw: Record<string, unknown>, sentAt = Number.NaN) =>
      (eventOfPostHog({ event: 'e', distinct_id: 'u', ...raw }, received, sentAt) as { timestamp?: number }).timestamp;
    // The client's clock is 10 minutes behind: its event of 11:49 happened at 11:59.
    expect(at({ timestamp: '2026-11-26T11:49:00.000Z' }, Date.parse('2026-11-26T11:50:00.000Z'))).toBe(Date.parse('2026-11-26T11:59:00.000Z'));
    expect(at({ timestamp: '2026-11-26T11:49:00.000Z' })).toBe(Date.parse('2026-11-26T11:49:00.000Z'));
    expect(at({ offset: 1500 })).toBe(received - 1500);
    expect(at({ timestamp: 'not a time' })).toBeUndefined();
  });

  it('leaves what is not an event for the usual check to refuse', () => {
    expect(eventOfPostHog('text', received, Number.NaN)).toBe('text');
    expect(eventOfPostHog({ event: 'e' }, received, Number.NaN)).toMatchObject({ event: 'e', distinctId: undefined });
  });
});
