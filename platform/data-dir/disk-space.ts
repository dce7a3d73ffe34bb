/**
 * A full disk (issue 36). What the embedded default keeps lives under DATA_DIR (PGlite, chDB, the bus's log, deploy
 * artifacts, mail files), so one watch on DATA_DIR's file system decides, for every role of the process, whether new
 * work that needs disk is taken:
 *
 *  - low       the space an unprivileged writer can still use (statfs: available blocks × block size) is under
 *              DATA_DIR_MIN_FREE_MB, found by a check every CHECK_MS; or a write under DATA_DIR failed for want of
 *              space (ENOSPC, EDQUOT, Postgres's 53100 disk_full, ClickHouse's NOT_ENOUGH_SPACE), which turns it low
 *              at once, without waiting for the next check
 *  - recovery  a check that finds the threshold met again, started after the last failed write: nothing restarts
 *  - who asks  the edge refuses batches (503 `unavailable`, counted as disk_full), the API refuses writes, the builder
 *              does not start builds. Reads go on, and the processor keeps moving what was accepted into the stores
 *              (a write of its that fails is retried from the bus's log).
 *
 * The threshold is a margin: while it lasts nothing new is asked of the engines, so what they still write (a
 * checkpoint, a session's last use, the accepted backlog) has room. Past it, PGlite and chDB answer ENOSPC with an
 * error and go on (tried on a full tmpfs), and the bus's log cuts a failed append back off, so a disk that does reach
 * zero loses nothing that was acknowledged either.
 */
import { statfs as fsStatfs } from 'node:fs/promises';
import type { Logger } from '../logger.ts';

/** How often DATA_DIR's free space is read. */
export const CHECK_MS = 2_000;

/** The part of node's fs.statfs this needs (tests give a fake). */
export type StatFs = (dir: string) => Promise<{ bavail: number | bigint; bsize: number | bigint }>;

export interface DiskSpaceState {
  low: boolean;
  /** Why: the last check found less free than the threshold, or a write failed for want of space since. */
  why: 'ok' | 'below_threshold' | 'write_failed';
  /** Free bytes at the last check (null before the first, or when it could not be read). */
  freeBytes: number | null;
  minFreeBytes: number;
}

export interface DiskSpace {
  /** True while new work that needs disk is refused. */
  readonly low: boolean;
  state(): DiskSpaceState;
  /**
   * A failed write: when it failed for want of space (isDiskFullError), the watch turns low at once and true is
   * returned. Anything else is ignored.
   */
  noteError(err: unknown): boolean;
  /** Read the free space now (the timer does this every CHECK_MS). */
  check(): Promise<DiskSpaceState>;
  close(): void;
}

/** What clients refused for want of disk are told (no sizes or paths: a 5xx shows no internals). */
export const DISK_FULL_MESSAGE = 'the service is out of disk space and cannot take this now; retry later';

const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', '53100']);
const DISK_FULL_TEXT = /No space left on device|Disk quota exceeded|NOT_ENOUGH_SPACE/;

/** Whether `err` (or an error it was caused by) says a write failed for want of space. */
export function isDiskFullError(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    const { code, type, message } = e as { code?: unknown; type?: unknown; message?: unknown };
    if (typeof code === 'string' && DISK_FULL_CODES.has(code)) return true;
    if (type === 'NOT_ENOUGH_SPACE') return true;
    if (typeof message === 'string' && DISK_FULL_TEXT.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export interface DiskSpaceWatchOptions {
  /** DATA_DIR (it must exist). */
  dir: string;
  /** DATA_DIR_MIN_FREE_MB in bytes. */
  minFreeBytes: number;
  logger?: Logger;
  /** Default CHECK_MS; 0: no timer (tests call check()). */
  intervalMs?: number;
  statfs?: StatFs;
}

/** Start watching `dir`; resolves after the first check, so the state is known before anything is served. */
export async function startDiskSpaceWatch(opts: DiskSpaceWatchOptions): Promise<DiskSpace> {
  const statfs = opts.statfs ?? ((dir: string) => fsStatfs(dir));
  const log = opts.logger;
  const mb = (bytes: number | null) => (bytes === null ? null : Math.floor(bytes / (1024 * 1024)));
  let state: DiskSpaceState = { low: false, why: 'ok', freeBytes: null, minFreeBytes: opts.minFreeBytes };
  /** Writes that failed for want of space so far: a check started before the last one cannot end its low. */
  let failures = 0;
  let checking: Promise<DiskSpaceState> | undefined;
  let unreadable = false;

  function become(next: DiskSpaceState): void {
    const was = state;
    state = next;
    if (next.low && !was.low) {
      log?.warn(
        { dir: opts.dir, freeMb: mb(next.freeBytes), minFreeMb: mb(opts.minFreeBytes), why: next.why },
        "DATA_DIR's disk is low on space: ingest, API writes and builds are refused (503) until space is freed; reads go on",
      );
    } else if (!next.low && was.low) {
      log?.info({ dir: opts.dir, freeMb: mb(next.freeBytes), minFreeMb: mb(opts.minFreeBytes) }, "DATA_DIR's disk has room again: everything is taken again");
    }
  }

  async function read(): Promise<DiskSpaceState> {
    const startedAfter = failures;
    let freeBytes: number;
    try {
      const s = await statfs(opts.dir);
      freeBytes = Number(s.bavail) * Number(s.bsize);
      unreadable = false;
    } catch (err) {
      // Say it once per spell; the state stays what it was (a failed write's low holds until a check succeeds).
      if (!unreadable) log?.warn({ err, dir: opts.dir }, "DATA_DIR's free space cannot be read; the last state holds");
      unreadable = true;
      return state;
    }
    if (freeBytes < opts.minFreeBytes) become({ low: true, why: 'below_threshold', freeBytes, minFreeBytes: opts.minFreeBytes });
    else if (failures === startedAfter) become({ low: false, why: 'ok', freeBytes, minFreeBytes: opts.minFreeBytes });
    else state = { ...state, freeBytes };
    return state;
  }

  const check = () => (checking ??= read().finally(() => (checking = undefined)));
  await check();
  const interval = opts.intervalMs ?? CHECK_MS;
  const timer = interval > 0 ? setInterval(() => void check(), interval) : undefined;
  timer?.unref();

  return {
    get low() {
      return state.low;
    },
    state: () => state,
    noteError(err) {
      if (!isDiskFullError(err)) return false;
      failures++;
      if (state.why !== 'write_failed') {
        log?.warn({ err: (err as Error)?.message }, 'a write under DATA_DIR failed for want of space');
        become({ ...state, low: true, why: 'write_failed' });
      }
      return true;
    },
    check,
    close() {
      if (timer) clearInterval(timer);
    },
  };
}

/** For a process that writes nothing under DATA_DIR (every port on its server): never low. */
export const NO_DATA_DIR_WRITES: DiskSpace = {
  low: false,
  state: () => ({ low: false, why: 'ok', freeBytes: null, minFreeBytes: 0 }),
  noteError: () => false,
  check: async () => ({ low: false, why: 'ok', freeBytes: null, minFreeBytes: 0 }),
  close: () => undefined,
};

/**
 * `port` (an adapter writing under DATA_DIR) with every failure of its methods shown to the watch on the way out, so
 * a write that failed for want of space anywhere (the processor's too) turns the watch low at once. Properties that
 * are not functions, and what the methods answer, are unchanged.
 */
export function reportingDiskFull<T extends object>(port: T, disk: DiskSpace): T {
  /** Per method, the wrapper made for it, made anew when the method is replaced (a test stands in a failing publish). */
  const wrapped = new Map<PropertyKey, { of: unknown; fn: unknown }>();
  const noted = (err: unknown) => {
    disk.noteError(err);
    throw err;
  };
  return new Proxy(port, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const made = wrapped.get(prop);
      if (made?.of === value) return made.fn;
      const fn = (...args: unknown[]) => {
        let out: unknown;
        try {
          out = Reflect.apply(value, target, args);
        } catch (err) {
          noted(err);
        }
        return out instanceof Promise ? out.catch(noted) : out;
      };
      wrapped.set(prop, { of: value, fn });
      return fn;
    },
  });
}
