import { describe, expect, it } from 'vitest';
import { computeFingerprint } from '../../processor/errors/fingerprint.ts';
import { parseEnvelope } from './sentry-envelope.ts';
import { errorEventOfSentry } from './sentry-event.ts';

describe('Sentry envelopes', () => {
  it('reads items with and without a length, payloads that hold newlines included', () => {
    const attachment = 'line one\nline two';
    const body = Buffer.from(
      `{"event_id":"abc","sent_at":"2026-11-25T00:00:00Z"}\n{"type":"attachment","length":${Buffer.byteLength(attachment)}}\n${attachment}\n{"type":"event"}\n{"message":"hi"}\n{"type":"session"}\n{"sid":"x"}`,
    );
    const out = parseEnvelope(body);
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.header.event_id).toBe('abc');
    expect(out.items.map((i) => [i.type, i.payload.toString()])).toEqual([
      ['attachment', attachment],
      ['event', '{"message":"hi"}'],
      ['session', '{"sid":"x"}'],
    ]);
  });

  it('refuses what is not an envelope, never throwing', () => {
    for (const bad of ['', 'not json', '[1]', '{}\n{"no":"type"}\n{}', '{}\n{"type":"event","length":999}\n{}', '{}\n{"type":"event","length":-1}\n']) {
      expect(parseEnvelope(Buffer.from(bad)).ok, bad).toBe(false);
    }
  });
});

describe('a Sentry event as our error event', () => {
  const sentryEvent = {
    event_id: 'f'.repeat(32),
    platform: 'node',
    release: 'A1B2C3D4E5F6',
    environment: 'staging',
    timestamp: 1_795_000_000.25,
    user: { id: 42 },
    request: { url: 'https://shop.example.com/checkout?step=2' },
    tags: { area: 'checkout' },
    extra: { orderId: 7 },
    exception: {
      values: [
        { type: 'Error', value: 'the cause' },
        {
          type: 'TypeError',
          value: 'card declined for order 1234',
          stacktrace: {
            frames: [
              { filename: 'node:internal/process/task_queues', function: 'process.processTicksAndRejections', lineno: 95, colno: 5 },
              { abs_path: '/app/node_modules/express/lib/router.js', function: 'handle', lineno: 10, colno: 3 },
              { abs_path: '/app/src/checkout.js', function: 'chargeCard', lineno: 12, colno: 9, in_app: true },
            ],
          },
        },
      ],
    },
  };

  it('takes the thrown exception, its frames newest first as a stack the fingerprint parses, release as gitSha', () => {
    const e = errorEventOfSentry(sentryEvent)!;
    expect(e.name).toBe('TypeError');
    expect(e.message).toBe('card declined for order 1234');
    expect(e.stack!.split('\n')).toEqual([
      'TypeError: card declined for order 1234',
      '    at chargeCard (/app/src/checkout.js:12:9)',
      '    at handle (/app/node_modules/express/lib/router.js:10:3)',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    ]);
    expect(computeFingerprint(e.name!, e.message, e.stack!).inAppFrame).toMatchObject({ fn: 'chargeCard', file: '/app/src/checkout.js' });
    expect(e.gitSha).toBe('a1b2c3d4e5f6');
    expect(e.runtime).toBe('node');
    expect(e.path).toBe('/checkout');
    expect(e.userId).toBe('42');
    expect(e.timestamp).toBe(1_795_000_000_250);
    expect(e.environment).toBeUndefined();
    // The SDK's own environment is kept for people to read (issue 23), never as ours.
    expect(e.extra).toEqual({
      orderId: 7,
      sentry: expect.objectContaining({ eventId: 'f'.repeat(32), tags: { area: 'checkout' }, environment: 'staging', release: 'A1B2C3D4E5F6' }),
    });
  });

  it('a message event keeps its message; a release that is no sha is not a gitSha; an event of neither is none', () => {
    const m = errorEventOfSentry({ platform: 'javascript', release: 'shop@1.2.3', logentry: { formatted: 'inventory low' } })!;
    expect(m).toMatchObject({ name: 'Message', message: 'inventory low', runtime: 'browser' });
    expect(m.gitSha).toBeUndefined();
    expect(errorEventOfSentry({ type: 'transaction', spans: [] })).toBeUndefined();
    expect(errorEventOfSentry(null)).toBeUndefined();
    expect(errorEventOfSentry('text')).toBeUndefined();
  });

  it('cuts to the spec field sizes and bounds extra', () => {
    const e = errorEventOfSentry({
      exception: {
        values: [
          {
            type: 'T'.repeat(500),
            value: 'm'.repeat(5000),
            stacktrace: { frames: Array.from({ length: 2000 }, (_, i) => ({ filename: `/src/f${i}.js`, function: `fn${i}`, lineno: i })) },
          },
        ],
      },
      extra: { big: 'x'.repeat(100_000) },
    })!;
    expect(e.name!.length).toBe(200);
    expect(e.message.length).toBe(2000);
    expect(e.stack!.length).toBeLessThanOrEqual(8192);
    expect(JSON.stringify(e.extra).length).toBeLessThan(1000);
  });
});
