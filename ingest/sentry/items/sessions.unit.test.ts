import { beforeAll, describe, expect, it } from 'vitest';
import { SessionAggregateSchema } from '../../../schemas/bus/client-items.ts';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { sessionAggregatesOfSentry } from './sessions.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});

describe('a Sentry sessions item as session aggregates', () => {
  it('maps each bucket with its minute, counts (missing ones 0) and the attrs', () => {
    const [raw] = payloadsOf(sdk.sessions, 'sessions');
    const out = sessionAggregatesOfSentry(raw, 100)!;
    expect(out.dropped).toBe(0);
    expect(out.aggregates).toEqual([
      { started: Date.parse('2026-11-26T10:00:00.000Z'), exited: 12, errored: 1, abnormal: 0, crashed: 0, release: 'abc1234', environment: 'production' },
      { started: Date.parse('2026-11-26T10:01:00.000Z'), exited: 3, errored: 0, abnormal: 0, crashed: 0, release: 'abc1234', environment: 'production' },
    ]);
    for (const a of out.aggregates) expect(SessionAggregateSchema.parse(a)).toEqual(a);
  });

  it('takes at most the room left, counts buckets without a start or past it, and refuses what has no aggregates', () => {
    const aggregates = [{ started: 'nope', exited: 1 }, ...Array.from({ length: 5 }, (_, i) => ({ started: `2026-11-26T10:0${i}:00Z`, exited: 1e12 }))];
    const out = sessionAggregatesOfSentry({ aggregates }, 3)!;
    expect(out.aggregates).toHaveLength(3);
    expect(out.aggregates[0]!.exited).toBe(1_000_000);
    expect(out.dropped).toBe(3);
    expect(sessionAggregatesOfSentry({ aggregates: 'x' }, 3)).toBeUndefined();
    expect(sessionAggregatesOfSentry('x', 3)).toBeUndefined();
  });
});
