import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logger.ts';
import type { Platform } from '../platform.ts';
import { metricValue } from '../../test/support/metrics-text.ts';
import { createOps } from './ops.ts';

/** Guarded rollout's verdicts on GET /metrics (builder/guarded-rollout/): by outcome, degraded ones by why not rolled back. */
describe('service_guarded_rollout_total', () => {
  it('shows the verdicts as they are at the scrape', async () => {
    const ports = {
      db: { query: vi.fn(async () => ({ rows: [], rowCount: 1 })) },
      analytics: { query: vi.fn(async () => []) },
      bus: { ping: vi.fn(async () => undefined) },
      limiter: { hitAll: vi.fn(async () => [{ allowed: true, remaining: 1, retryAfterSec: 1 }]) },
    } as unknown as Pick<Platform, 'db' | 'analytics' | 'bus' | 'limiter'>;
    const ops = createOps({ ports, uses: ['relational'], logger: createLogger('silent'), metricsToken: 'metrics-token-0123456789' });
    const totals = { healthy: 3, rolled_back: 1, superseded: 2, degraded: { not_opted_in: 4 } as Record<string, number> };
    ops.metrics.addGuardedRollout(() => totals);
    const scrape = async () => (await ops.answer('/metrics')).body;
    let text = await scrape();
    expect(metricValue(text, 'service_guarded_rollout_total', { outcome: 'healthy', reason: '' })).toBe(3);
    expect(metricValue(text, 'service_guarded_rollout_total', { outcome: 'rolled_back', reason: '' })).toBe(1);
    expect(metricValue(text, 'service_guarded_rollout_total', { outcome: 'degraded', reason: 'not_opted_in' })).toBe(4);
    totals.degraded.no_longer_live = 1;
    text = await scrape();
    expect(metricValue(text, 'service_guarded_rollout_total', { outcome: 'degraded', reason: 'no_longer_live' })).toBe(1);
  });
});
