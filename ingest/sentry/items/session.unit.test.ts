import { beforeAll, describe, expect, it } from 'vitest';
import { SessionUpdateSchema } from '../../../schemas/bus/client-items.ts';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { sessionUpdateOfSentry } from './session.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});
const NOW = Date.UTC(2026, 10, 26, 12);

describe('a Sentry session item as a session update', () => {
  it("maps @sentry/core's own session (sessionToJSON): ISO times as epoch ms, attrs' release and environment; no address or user agent", () => {
    const [raw] = payloadsOf(sdk.session, 'session') as Array<Record<string, unknown>>;
    const s = sessionUpdateOfSentry(raw, NOW)!;
    expect(s).toMatchObject({ sid: raw!.sid, did: 'user-7', init: true, status: 'exited', errors: 0, release: 'abc1234', environment: 'production' });
    expect(s.started).toBe(Date.parse(raw!.started as string));
    expect(s.timestamp).toBe(Date.parse(raw!.timestamp as string));
    expect(s.duration).toBe(raw!.duration);
    expect(JSON.stringify(s)).not.toMatch(/auto|Mozilla/);
    expect(SessionUpdateSchema.parse(s)).toEqual(s);
  });

  it("keeps `unhandled` (@sentry/browser 10+'s status for an uncaught error), takes a numeric did, cuts long fields to the bus's bounds, and refuses what is no session", () => {
    const base = { sid: 'x'.repeat(300), started: '2026-11-26T10:00:00Z', status: 'unhandled', errors: 2.7, did: 42, attrs: { release: 'r'.repeat(400) } };
    const s = sessionUpdateOfSentry(base, NOW)!;
    expect(s).toMatchObject({ status: 'unhandled', did: '42', errors: 2, init: false, timestamp: NOW });
    expect(s.sid).toHaveLength(128);
    expect(s.release).toHaveLength(250);
    expect(SessionUpdateSchema.safeParse(s).success).toBe(true);
    expect(sessionUpdateOfSentry({ ...base, errors: -5 }, NOW)!.errors).toBe(0);
    expect(sessionUpdateOfSentry({ ...base, status: 'weird' }, NOW)).toBeUndefined();
    expect(sessionUpdateOfSentry({ ...base, started: 'yesterday' }, NOW)).toBeUndefined();
    expect(sessionUpdateOfSentry({ ...base, sid: undefined }, NOW)).toBeUndefined();
    expect(sessionUpdateOfSentry([base], NOW)).toBeUndefined();
    expect(sessionUpdateOfSentry(null, NOW)).toBeUndefined();
  });
});
