import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { computeFingerprint } from '../../processor/errors/fingerprint.ts';
import { parseStack } from '../../processor/errors/stack-parser.ts';
import { decodeErrorBatch } from '../../schemas/bus/error-events.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { parseErrorBatch } from '../error-batch.ts';
import { parseEnvelope } from './sentry-envelope.ts';
import { debugIdsOfSentry, errorEventOfSentry } from './sentry-event.ts';

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
    // As sent: the stamp keeps it as the context's clientEnvironment, never as the event's environment (§7.4).
    expect(e.environment).toBe('staging');
    // The SDK's own environment is kept for people to read (issue 23), never as ours: the context's clientEnvironment
    // once stamped (issue 40, sentry-event.unit.test.ts).
    expect(e.extra).toEqual({ orderId: 7, sentry: expect.objectContaining({ eventId: 'f'.repeat(32) }) });
    expect(e).toMatchObject({ tags: { area: 'checkout' }, release: 'A1B2C3D4E5F6' });
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

describe("a Sentry event's debug ids (issue 37)", () => {
  // The real @sentry/browser 11 in Chromium, an error thrown in one of two bundles that the real `sentry-cli sourcemaps
  // inject` gave a debug id (fixtures/capture-browser-envelope.mjs made this file).
  const envelope = parseEnvelope(readFileSync(new URL('./fixtures/browser-debug-ids.envelope', import.meta.url)));
  const item = envelope.ok ? envelope.items.find((i) => i.type === 'event') : undefined;
  const sentryEvent = JSON.parse(item!.payload.toString());

  it("maps debug_meta's sourcemap images to debugIds, keyed by the file the stack names, and the edge stamps them", () => {
    const [image] = sentryEvent.debug_meta.images;
    const e = errorEventOfSentry(sentryEvent)!;
    expect(e.debugIds).toEqual({ [image.code_file]: image.debug_id });
    // Only the bundle the error went through, under the name its frames carry in our stack.
    expect(image.code_file).toMatch(/\/assets\/app-3f9a2c1b\.js$/);
    expect(parseStack(e.stack!).map((f) => f.file)).toContain(image.code_file);
    const out = parseErrorBatch(Buffer.from(JSON.stringify({ batch: [e] })), { projectId: 'p', originHost: null, receivedAt: 1, defaultRuntime: 'browser' });
    expect(out.ok).toBe(true);
    expect(decodeErrorBatch(out.ok ? out.value : Buffer.alloc(0))!.events[0]!.debugIds).toEqual({ [image.code_file]: image.debug_id });
  });

  it('takes sourcemap images only, with a file and a uuid, at most 100, and none when there are none', () => {
    const id = (i: number) => `4a8cb436-4752-53b3-80d8-${String(i).padStart(12, '0')}`;
    expect(
      debugIdsOfSentry({
        images: [
          { type: 'sourcemap', code_file: '/app/dist/server.js', debug_id: '4A8CB436475253B380D84CF1C268A742' },
          { type: 'elf', code_file: '/usr/lib/libc.so', debug_id: id(1) },
          { type: 'sourcemap', code_file: '', debug_id: id(2) },
          { type: 'sourcemap', code_file: 42, debug_id: id(3) },
          { type: 'sourcemap', code_file: '/app/dist/a.js', debug_id: 'not-a-uuid' },
          { type: 'sourcemap', code_file: 'x'.repeat(2049), debug_id: id(4) },
          { type: 'sourcemap', code_file: '__proto__', debug_id: id(5) },
          { type: 'sourcemap', code_file: '/app/dist/b.js' },
          null,
          'text',
        ],
      }),
    ).toEqual({ '/app/dist/server.js': '4a8cb436-4752-53b3-80d8-4cf1c268a742' });
    const many = Array.from({ length: 5000 }, (_, i) => ({ type: 'sourcemap', code_file: `/app/dist/f${i % 300}.js`, debug_id: id(i % 300) }));
    const cut = debugIdsOfSentry({ images: many })!;
    expect(Object.keys(cut)).toHaveLength(LIMITS.errorFields.debugIds);
    expect(cut['/app/dist/f99.js']).toBe(id(99));
    expect(cut).not.toHaveProperty('/app/dist/f100.js');
    for (const none of [undefined, null, 'x', { images: 'x' }, { images: [] }, { images: [{ type: 'macho', debug_id: id(1) }] }])
      expect(debugIdsOfSentry(none)).toBeUndefined();
    const { debug_meta: _, ...without } = sentryEvent;
    expect(errorEventOfSentry(without)).not.toHaveProperty('debugIds');
  });
});
