import { describe, expect, it } from 'vitest';
import type { FlagAnswer as ServiceFlagAnswer } from '../../schemas/flags.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { EDGE_PATHS } from '../../schemas/api/route-table.ts';
import type { SessionUpdate as ServiceSessionUpdate } from '../../schemas/bus/client-items.ts';
import { REQUEST_BYTES, SESSIONS_ROUTE, WIRE_LIMITS, WIRE_SITE_BASE, type FlagAnswer, type SessionUpdate } from './src/wire.ts';

/** The browser package's own copy of the wire (src/wire.ts) is the service's: the type assignment fails the typecheck when the flag answer drifts. */
const asClientFlag = (a: ServiceFlagAnswer): FlagAnswer => a;
/** A session update the client builds is one the edge's schema types (schemas/bus/client-items.ts). */
const asServiceSession = (s: SessionUpdate): ServiceSessionUpdate => s;

describe("the browser client's wire", () => {
  it('has the edge limits and reads the flag answer', () => {
    expect(WIRE_LIMITS.errorBatch).toEqual({ maxEvents: LIMITS.errorBatch.maxEvents, maxBodyBytes: LIMITS.errorBatch.maxBodyBytes });
    expect(WIRE_LIMITS.analyticsBatch).toEqual({ maxEvents: LIMITS.analyticsBatch.maxEvents, maxBodyBytes: LIMITS.analyticsBatch.maxBodyBytes });
    expect(REQUEST_BYTES).toBeLessThanOrEqual(Math.min(LIMITS.errorBatch.maxBodyBytes, LIMITS.analyticsBatch.maxBodyBytes));
    for (const path of [EDGE_PATHS.siteErrors, EDGE_PATHS.siteAnalytics, EDGE_PATHS.siteFlags, EDGE_PATHS.siteSessions])
      expect(path.startsWith(WIRE_SITE_BASE), path).toBe(true);
    expect(WIRE_SITE_BASE + SESSIONS_ROUTE).toBe(EDGE_PATHS.siteSessions);
    expect(`/v1/${SESSIONS_ROUTE}`).toBe(EDGE_PATHS.sessions);
    expect(asServiceSession({ sid: 's', init: true, status: 'ok', errors: 0, started: 1, timestamp: 1 }).init).toBe(true);
    expect(asClientFlag({ enabled: false, variant: null, payload: null, reason: 'disabled' }).enabled).toBe(false);
  });
});
