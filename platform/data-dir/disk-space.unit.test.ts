import { afterEach, describe, expect, it, vi } from 'vitest';
import { BusUnavailableError } from '../ports/bus.ts';
import { AnalyticalQueryError } from '../ports/analytical-store.ts';
import { CHECK_MS, isDiskFullError, reportingDiskFull, startDiskSpaceWatch, type StatFs } from './disk-space.ts';

const MB = 1024 * 1024;
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });

/** A file system whose free space the test sets; `hold` keeps the next statfs call waiting until released. */
function fakeDisk(freeMb: number) {
  let free = freeMb * MB;
  let held: { release(): void } | undefined;
  const statfs: StatFs = async () => {
    if (held) await new Promise<void>((r) => (held = { release: r }));
    return { bavail: free / 4096, bsize: 4096 };
  };
  return {
    statfs,
    set: (mb: number) => (free = mb * MB),
    hold: () => (held = { release: () => undefined }),
    release: () => {
      const h = held;
      held = undefined;
      h?.release();
    },
    failing: (async () => {
      throw Object.assign(new Error('ENOENT: no such file or directory, statfs'), { code: 'ENOENT' });
    }) as StatFs,
  };
}

const watches: Array<{ close(): void }> = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.close();
  vi.useRealTimers();
});
const watch = async (statfs: StatFs, minFreeMb = 100, intervalMs = 0) => {
  const w = await startDiskSpaceWatch({ dir: '/data', minFreeBytes: minFreeMb * MB, statfs, intervalMs });
  watches.push(w);
  return w;
};

describe('the disk-space watch on DATA_DIR', () => {
  it('is low while the free space is under the threshold, and not at or above it', async () => {
    const disk = fakeDisk(500);
    const w = await watch(disk.statfs, 100);
    expect(w.state()).toEqual({ low: false, why: 'ok', freeBytes: 500 * MB, minFreeBytes: 100 * MB });
    disk.set(99);
    await w.check();
    expect(w.low).toBe(true);
    expect(w.state()).toMatchObject({ why: 'below_threshold', freeBytes: 99 * MB });
    disk.set(100);
    await w.check();
    expect(w.low).toBe(false);
  });

  it('knows the state at start: a disk already low is refused from the first request', async () => {
    const w = await watch(fakeDisk(10).statfs, 100);
    expect(w.low).toBe(true);
  });

  it('turns low at once on a write that failed for want of space, before any check, and back at the next check that finds room', async () => {
    const disk = fakeDisk(500);
    const w = await watch(disk.statfs, 100);
    expect(w.noteError(new Error('connection reset'))).toBe(false);
    expect(w.low).toBe(false);
    expect(w.noteError(enospc())).toBe(true);
    expect(w.state()).toMatchObject({ low: true, why: 'write_failed' });
    await w.check();
    expect(w.low).toBe(false);
  });

  it('a check that started before the failed write does not end the low it caused', async () => {
    const disk = fakeDisk(500);
    const w = await watch(disk.statfs, 100);
    disk.hold();
    const before = w.check();
    w.noteError(enospc());
    disk.release();
    await before;
    expect(w.state()).toMatchObject({ low: true, why: 'write_failed', freeBytes: 500 * MB });
    await w.check();
    expect(w.low).toBe(false);
  });

  it('recovers by itself: the timer reads the disk again every CHECK_MS', async () => {
    vi.useFakeTimers();
    const disk = fakeDisk(10);
    const w = await watch(disk.statfs, 100, CHECK_MS);
    expect(w.low).toBe(true);
    disk.set(300);
    await vi.advanceTimersByTimeAsync(CHECK_MS);
    expect(w.low).toBe(false);
    disk.set(50);
    await vi.advanceTimersByTimeAsync(CHECK_MS);
    expect(w.low).toBe(true);
  });

  it('a free space that cannot be read keeps the last state', async () => {
    const disk = fakeDisk(500);
    let statfs = disk.statfs;
    const w = await watch((dir) => statfs(dir), 100);
    w.noteError(enospc());
    statfs = disk.failing;
    await w.check();
    expect(w.low).toBe(true);
    statfs = disk.statfs;
    await w.check();
    expect(w.low).toBe(false);
  });
});

describe('what counts as a write that failed for want of space', () => {
  it('the OS, Postgres and ClickHouse saying so, directly or as the cause of another error', () => {
    expect(isDiskFullError(enospc())).toBe(true);
    expect(isDiskFullError(Object.assign(new Error('quota'), { code: 'EDQUOT' }))).toBe(true);
    expect(isDiskFullError(Object.assign(new Error('could not extend file "base/5/16385_fsm": No space left on device'), { code: '53100' }))).toBe(true);
    expect(isDiskFullError(new AnalyticalQueryError(243, 'NOT_ENOUGH_SPACE', 'Cannot reserve 1.11 MiB, not enough space'))).toBe(true);
    expect(isDiskFullError(new BusUnavailableError('in-process bus: cannot write the log of error-events', { cause: enospc() }))).toBe(true);
    expect(isDiskFullError(new BusUnavailableError('bus closed'))).toBe(false);
    expect(isDiskFullError(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(isDiskFullError(undefined)).toBe(false);
    expect(isDiskFullError('ENOSPC')).toBe(false);
  });

  it("a port reporting to the watch: its failures turn the watch low and reach the caller unchanged; its answers and properties don't change", async () => {
    const w = await watch(fakeDisk(500).statfs, 100);
    const err = enospc();
    const port = reportingDiskFull(
      {
        adapter: 'in-process' as const,
        publish: async (n: number) => {
          if (n < 0) throw err;
          return n * 2;
        },
        now: () => {
          throw err;
        },
        other: async () => {
          throw new Error('down');
        },
      },
      w,
    );
    expect(port.adapter).toBe('in-process');
    expect(await port.publish(2)).toBe(4);
    await expect(port.other()).rejects.toThrow('down');
    expect(w.low).toBe(false);
    await expect(port.publish(-1)).rejects.toBe(err);
    expect(w.low).toBe(true);
    await w.check();
    expect(() => port.now()).toThrow(err);
    expect(w.low).toBe(true);
  });

  it('a method replaced on the port is the one called from then on (it once kept calling the first)', async () => {
    const w = await watch(fakeDisk(500).statfs, 100);
    const port = reportingDiskFull({ publish: async () => 'first' }, w);
    expect(await port.publish()).toBe('first');
    port.publish = async () => 'second';
    expect(await port.publish()).toBe('second');
  });
});
