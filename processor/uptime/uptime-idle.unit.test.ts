import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { systemClock } from '../../platform/clock.ts';
import { monitorsRepository } from './repositories/monitors-repository.ts';
import { CLAIM_IDLE_CAP_MS, startUptimeMonitor } from './uptime-monitor.ts';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('the uptime monitor at rest (issue 44: nothing polls when nothing happens)', () => {
  it('claims due checks less often while claims find nothing, and always when tick() is called', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'performance', 'Date'] });
    const claimDue = vi.spyOn(monitorsRepository, 'claimDue').mockResolvedValue([]);
    // Every other query (heartbeats, maintenance) finds nothing.
    const db = { query: async () => ({ rows: [], rowCount: 0 }), transaction: async () => undefined };
    const platform = {
      db,
      clock: systemClock,
      logger: createLogger('silent'),
      outbound: {},
      analytics: { insert: async () => undefined },
    } as unknown as Parameters<typeof startUptimeMonitor>[0];
    const monitor = await startUptimeMonitor(platform, { tickMs: 250 });
    try {
      await vi.advanceTimersByTimeAsync(6_000);
      // 24 ticks; claims at the first, 500 ms later, then every CLAIM_IDLE_CAP_MS: 9 (every tick before: 24).
      const ticks = 6_000 / 250;
      expect(claimDue.mock.calls.length).toBeGreaterThanOrEqual(Math.floor(6_000 / CLAIM_IDLE_CAP_MS));
      expect(claimDue.mock.calls.length).toBeLessThanOrEqual(Math.ceil(6_000 / CLAIM_IDLE_CAP_MS) + 2);
      expect(claimDue.mock.calls.length).toBeLessThan(ticks / 2);
      const before = claimDue.mock.calls.length;
      await monitor.tick();
      expect(claimDue.mock.calls.length).toBe(before + 1);
    } finally {
      await monitor.stop();
    }
  });
});
