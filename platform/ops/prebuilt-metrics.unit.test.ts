import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logger.ts';
import type { Platform } from '../platform.ts';
import { metricValue } from '../../test/support/metrics-text.ts';
import { createOps } from './ops.ts';

/** Prebuilt uploads refused (issue 42, builder/prebuilt-deploy.ts) on GET /metrics, by reason, as they are at the scrape. */
describe('service_prebuilt_refusals_total', () => {
  it('shows each reason counted so far', async () => {
    const ports = {
      db: { query: vi.fn(async () => ({ rows: [], rowCount: 1 })) },
      analytics: { query: vi.fn(async () => []) },
      bus: { ping: vi.fn(async () => undefined) },
      limiter: { hitAll: vi.fn(async () => [{ allowed: true, remaining: 1, retryAfterSec: 1 }]) },
    } as unknown as Pick<Platform, 'db' | 'analytics' | 'bus' | 'limiter'>;
    const ops = createOps({ ports, uses: ['relational'], logger: createLogger('silent'), metricsToken: 'metrics-token-0123456789' });
    const counts: Record<string, number> = { link: 2 };
    ops.metrics.addPrebuiltRefusals(() => counts);
    const scrape = async () => (await ops.answer('/metrics')).body;
    expect(metricValue(await scrape(), 'service_prebuilt_refusals_total', { reason: 'link' })).toBe(2);
    counts.artifact_too_large = 1;
    expect(metricValue(await scrape(), 'service_prebuilt_refusals_total', { reason: 'artifact_too_large' })).toBe(1);
  });
});
