import { describe, expect, it } from 'vitest';
import type { FlagAnswer as ServiceFlagAnswer } from '../../schemas/flags.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { EDGE_PATHS } from '../../schemas/api/route-table.ts';
import { WIRE_LIMITS, WIRE_SITE_BASE, type FlagAnswer } from './src/wire.ts';

/** The browser package's own copy of the wire (src/wire.ts) is the service's: the type assignment fails the typecheck when the flag answer drifts. */
const asClientFlag = (a: ServiceFlagAnswer): FlagAnswer => a;

describe("the browser client's wire", () => {
  it('has the edge limits and reads the flag answer', () => {
    expect(WIRE_LIMITS.errorBatch).toEqual({ maxEvents: LIMITS.errorBatch.maxEvents, maxBodyBytes: LIMITS.errorBatch.maxBodyBytes });
    expect(WIRE_LIMITS.analyticsBatch).toEqual({ maxEvents: LIMITS.analyticsBatch.maxEvents, maxBodyBytes: LIMITS.analyticsBatch.maxBodyBytes });
    for (const path of [EDGE_PATHS.siteErrors, EDGE_PATHS.siteAnalytics, EDGE_PATHS.siteFlags]) expect(path.startsWith(WIRE_SITE_BASE), path).toBe(true);
    expect(asClientFlag({ enabled: false, variant: null, payload: null, reason: 'disabled' }).enabled).toBe(false);
  });
});
