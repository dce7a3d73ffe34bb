import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { systemClock } from '../../platform/clock.ts';
import { heartbeatsRepository } from './repositories/heartbeats-repository.ts';
import { monitorsRepository } from './repositories/monitors-repository.ts';
import { CLAIM_FALLBACK_MS, CLAIM_IDLE_CAP_MS, HEARTBEAT_IDLE_CAP_MS, STAMP_POLL_MS, startUptimeMonitor } from './uptime-monitor.ts';

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** A platform whose every query finds nothing (the repositories the tests watch are spied on). */
const idlePlatform = () =>
  ({
    db: { query: async () => ({ rows: [], rowCount: 0 }), transaction: async () => undefined },
    clock: systemClock,
    logger: createLogger('silent'),
    outbound: {},
    analytics: { insert: async () => undefined },
  }) as unknown as Parameters<typeof startUptimeMonitor>[0];

describe('the uptime monitor at rest (issue 44: nothing polls when nothing happens)', () => {
  it('claims due checks and sweeps heartbeats less often while they find nothing, and claims whenever tick() is called', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'performance', 'Date'] });
    const claimDue = vi.spyOn(monitorsRepository, 'claimDue').mockResolvedValue([]);
    // The schedule says a check is due already, yet claims find nothing (another process holds it): the claim backs off.
    vi.spyOn(monitorsRepository, 'schedule').mockResolvedValue({ nextDueAt: 0, stamp: '1' });
    const heartbeatSweeps = vi.spyOn(heartbeatsRepository, 'anyDue').mockResolvedValue(false);
    // Every other query (heartbeats, maintenance) finds nothing.
    const monitor = await startUptimeMonitor(idlePlatform(), { tickMs: 250 });
    try {
      await vi.advanceTimersByTimeAsync(6_000);
      // 24 ticks; claims at the first, 500 ms later, then every CLAIM_IDLE_CAP_MS: 9 (every tick before: 24).
      const ticks = 6_000 / 250;
      expect(claimDue.mock.calls.length).toBeGreaterThanOrEqual(Math.floor(6_000 / CLAIM_IDLE_CAP_MS));
      expect(claimDue.mock.calls.length).toBeLessThanOrEqual(Math.ceil(6_000 / CLAIM_IDLE_CAP_MS) + 2);
      expect(claimDue.mock.calls.length).toBeLessThan(ticks / 2);
      // The heartbeat sweep: every second before; now 1 s, 2 s, then every HEARTBEAT_IDLE_CAP_MS (0.25, 2.25, 6.25 s).
      await vi.advanceTimersByTimeAsync(6_000);
      expect(heartbeatSweeps.mock.calls.length).toBeGreaterThanOrEqual(Math.floor(12_000 / HEARTBEAT_IDLE_CAP_MS));
      expect(heartbeatSweeps.mock.calls.length).toBeLessThanOrEqual(Math.ceil(12_000 / HEARTBEAT_IDLE_CAP_MS) + 2);
      expect(heartbeatSweeps.mock.calls.length).toBeLessThan(12 / 2);
      const before = claimDue.mock.calls.length;
      await monitor.tick();
      expect(claimDue.mock.calls.length).toBe(before + 1);
    } finally {
      await monitor.stop();
    }
  });

  it('with no URL monitor it reads the uptime stamp once a second, claims when it moves, and every CLAIM_FALLBACK_MS anyway', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'performance', 'Date'] });
    const claimDue = vi.spyOn(monitorsRepository, 'claimDue').mockResolvedValue([]);
    const schedule = vi.spyOn(monitorsRepository, 'schedule').mockResolvedValue({ nextDueAt: null, stamp: '1' });
    let stamp = '1';
    const stampReads = vi.spyOn(monitorsRepository, 'changeStamp').mockImplementation(async () => stamp);
    const monitor = await startUptimeMonitor(idlePlatform(), { tickMs: 250 });
    try {
      await vi.advanceTimersByTimeAsync(250);
      expect([claimDue.mock.calls.length, schedule.mock.calls.length]).toEqual([1, 1]);
      // Just short of the fallback: no claim, the stamp read once a second.
      await vi.advanceTimersByTimeAsync(CLAIM_FALLBACK_MS - 500);
      expect(claimDue.mock.calls.length).toBe(1);
      const seconds = (CLAIM_FALLBACK_MS - 500) / STAMP_POLL_MS;
      expect(stampReads.mock.calls.length).toBeGreaterThanOrEqual(Math.floor(seconds) - 1);
      expect(stampReads.mock.calls.length).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
      // The fallback claim, and the schedule read again after it.
      await vi.advanceTimersByTimeAsync(500);
      expect([claimDue.mock.calls.length, schedule.mock.calls.length]).toEqual([2, 2]);
      // The stamp moved (a monitor was made): a claim at the next read, within a second.
      stamp = '2';
      schedule.mockResolvedValue({ nextDueAt: null, stamp: '2' });
      await vi.advanceTimersByTimeAsync(STAMP_POLL_MS);
      expect(claimDue.mock.calls.length).toBe(3);
      await vi.advanceTimersByTimeAsync(5 * STAMP_POLL_MS);
      expect(claimDue.mock.calls.length).toBe(3);
      await monitor.tick();
      expect(claimDue.mock.calls.length).toBe(4);
    } finally {
      await monitor.stop();
    }
  });
});
