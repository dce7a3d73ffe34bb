import { describe, expect, it } from 'vitest';
import { ErrorEventSchema, stampErrorEvent } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { breadcrumbsOfSentry, errorEventOfSentry } from './sentry-event.ts';

/** A browser event as @sentry/browser sends it (shapes from @sentry/core's prepareEvent and the HttpContext integration). */
const browserEvent = {
  event_id: 'b'.repeat(32),
  platform: 'javascript',
  level: 'error',
  timestamp: 1_795_000_000.25,
  release: 'shop@1.4.0',
  dist: 'web-7',
  environment: 'staging',
  server_name: 'edge-1',
  exception: {
    values: [
      {
        type: 'TypeError',
        value: 'x is undefined',
        stacktrace: { frames: [{ filename: 'https://shop.example/app.js', function: 'go', lineno: 1, colno: 2 }] },
      },
    ],
  },
  breadcrumbs: [
    { timestamp: 1_795_000_000.1, category: 'ui.click', message: 'body > button#buy' },
    { timestamp: 1_795_000_000.2, category: 'fetch', type: 'http', level: 'error', data: { method: 'POST', url: '/api/cart', status_code: 500 } },
  ],
  tags: { plan: 'pro', build: 12 },
  contexts: { trace: { trace_id: 'd4'.repeat(16) }, state: { state: { type: 'redux', value: { cart: [1] } } } },
  request: {
    url: 'https://shop.example/checkout?step=2',
    headers: { 'User-Agent': 'Mozilla/5.0 Chrome/120', Referer: 'https://shop.example/', Cookie: 'sid=secret' },
  },
  user: { id: 42, email: 'ann@example.com', ip_address: '{{auto}}', username: 'ann' },
  sdk: { name: 'sentry.javascript.browser', version: '11.12.0', integrations: ['x'], packages: [] },
  extra: { cartSize: 3 },
};

describe('a Sentry event as ours: the context people triage by (issue 40)', () => {
  it('maps breadcrumbs, level, tags, contexts, request, user, release, dist, server_name, the SDK and its environment', () => {
    const e = errorEventOfSentry(browserEvent)!;
    const stamped = stampErrorEvent(ErrorEventSchema.parse(e), 'id', 'browser');
    expect(stamped.context).toEqual({
      breadcrumbs: [
        { timestamp: 1_795_000_000_100, category: 'ui.click', message: 'body > button#buy' },
        { timestamp: 1_795_000_000_200, category: 'fetch', type: 'http', level: 'error', data: { method: 'POST', url: '/api/cart', status_code: 500 } },
      ],
      level: 'error',
      tags: { plan: 'pro', build: '12' },
      contexts: { trace: { trace_id: 'd4'.repeat(16) }, state: { state: '{"type":"redux","value":{"cart":[1]}}' } },
      request: { url: 'https://shop.example/checkout?step=2', headers: { 'user-agent': 'Mozilla/5.0 Chrome/120', referer: 'https://shop.example/' } },
      user: { id: '42', email: 'ann@example.com', username: 'ann' },
      release: 'shop@1.4.0',
      dist: 'web-7',
      serverName: 'edge-1',
      sdk: { name: 'sentry.javascript.browser', version: '11.12.0' },
      clientEnvironment: 'staging',
    });
    // No longer folded into extra; the event id stays there (feedback names the event by it).
    expect(stamped.extra).toEqual({ cartSize: 3, sentry: { eventId: 'b'.repeat(32) } });
    expect(stamped).not.toHaveProperty('environment');
    expect(stamped.userId).toBe('42');
    expect(stamped.path).toBe('/checkout');
  });

  it("reads older SDKs' { values: [...] } breadcrumbs and tag pairs; keeps the newest 100; times in seconds become ms", () => {
    const values = Array.from({ length: 130 }, (_, i) => ({ timestamp: 1_700_000_000 + i, message: `m${i}` }));
    const e = errorEventOfSentry({ message: 'hi', breadcrumbs: { values }, tags: [['a', 'b']] })!;
    const crumbs = stampErrorEvent(ErrorEventSchema.parse(e), 'id', 'node').context!.breadcrumbs!;
    expect(crumbs).toHaveLength(LIMITS.errorContext.breadcrumbs);
    expect(crumbs[0]).toEqual({ timestamp: 1_700_000_030_000, message: 'm30' });
    expect(crumbs.at(-1)).toEqual({ timestamp: 1_700_000_129_000, message: 'm129' });
    expect(stampErrorEvent(ErrorEventSchema.parse(e), 'id', 'node').context!.tags).toEqual({ a: 'b' });
    expect(breadcrumbsOfSentry('junk')).toBeUndefined();
    expect(breadcrumbsOfSentry([{ timestamp: 'x' }, 5])).toEqual([{ timestamp: 'x' }, 5]);
  });

  it('an event of junk context fields is still taken, without them', () => {
    const e = errorEventOfSentry({ message: 'hi', breadcrumbs: 5, tags: 'x', contexts: [], request: 'r', user: 'u', sdk: 'x', level: 7, release: {} })!;
    const parsed = ErrorEventSchema.safeParse(e);
    expect(parsed.success).toBe(true);
    expect(stampErrorEvent(parsed.data!, 'id', 'node').context).toBeUndefined();
  });
});
