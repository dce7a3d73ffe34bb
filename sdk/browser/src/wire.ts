/**
 * What the browser client sends and reads, written out so the package stands alone (tied to the service's
 * schemas/limits.ts and schemas/flags.ts by sdk/browser/wire.unit.test.ts).
 */
export const WIRE_LIMITS = {
  errorBatch: { maxEvents: 20, maxBodyBytes: 64 * 1024 },
  analyticsBatch: { maxEvents: 100, maxBodyBytes: 512 * 1024 },
} as const;

/** Where a site's own host relays to the edge (the route table's siteErrors, siteAnalytics, siteFlags share it). */
export const WIRE_SITE_BASE = '/service/v1/';

/** One flag's answer (`GET .../flags/i`). */
export interface FlagAnswer {
  enabled: boolean;
  variant: string | null;
  payload: unknown;
  reason: 'disabled' | 'no_condition_match' | 'out_of_rollout' | 'rollout' | 'unknown_flag';
}
