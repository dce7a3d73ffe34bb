import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AnalyticsEventSchema, clampTimestamp, validAnalyticsEvent } from './analytics-event.ts';
import { prng } from '../test/support/prng.ts';

describe('the analytics event check', () => {
  it('the written-out check and the zod schema agree on 5,000 random events, valid and not', () => {
    const rnd = prng(16);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => 'x'.repeat(n);
    const value = (): unknown =>
      pick<unknown>([
        undefined,
        undefined,
        '',
        text(1),
        text(64),
        text(65),
        text(200),
        text(201),
        text(2049),
        7,
        Number.NaN,
        Infinity,
        null,
        true,
        [],
        {},
        randomUUID(),
        randomUUID().toUpperCase(),
        '00000000-0000-0000-0000-000000000000',
        'not-a-uuid',
        new Date().toISOString(),
        { a: 1 },
        Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])),
        { '': 1 },
        { [text(201)]: 1 },
        { big: text(17_000) },
        { plan: 'pro', n: 3, nested: { x: [1, 2] } },
      ]);
    let valid = 0;
    for (let i = 0; i < 5_000; i++) {
      const raw: Record<string, unknown> = {};
      for (const k of ['event', 'distinctId', 'properties', 'timestamp', 'uuid', 'sessionId', 'path', 'deployId', 'gitSha', 'environment', 'unknownField']) {
        const v = k === 'event' || k === 'distinctId' ? (rnd() < 0.8 ? pick(['pageview', 'u1', text(200)]) : value()) : rnd() < 0.65 ? undefined : value();
        if (v !== undefined) raw[k] = v;
      }
      const input = rnd() < 0.02 ? pick<unknown>([null, 'x', [raw], 3]) : raw;
      const zod = AnalyticsEventSchema.safeParse(input);
      const fast = validAnalyticsEvent(input);
      expect(fast !== undefined, JSON.stringify(input).slice(0, 300)).toBe(zod.success);
      if (zod.success) {
        expect(fast).toEqual(zod.data);
        valid++;
      }
    }
    expect(valid).toBeGreaterThan(500);
  });

  it('trusts a client time within 7 days back and 5 minutes ahead of receipt, else takes the receive time', () => {
    const now = Date.UTC(2026, 10, 25, 12);
    expect(clampTimestamp(now - 6 * 86_400_000, now)).toBe(now - 6 * 86_400_000);
    expect(clampTimestamp(new Date(now + 60_000).toISOString(), now)).toBe(now + 60_000);
    expect(clampTimestamp(now - 8 * 86_400_000, now)).toBe(now);
    expect(clampTimestamp(now + 10 * 60_000, now)).toBe(now);
    expect(clampTimestamp('yesterday', now)).toBe(now);
    expect(clampTimestamp(undefined, now)).toBe(now);
  });
});
