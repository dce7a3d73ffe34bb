/**
 * One owner per data directory. Every process that opens an embedded engine under DATA_DIR (PGlite, chDB, the bus's
 * log) first takes an exclusive lock on `DATA_DIR/service.lock`, before any engine opens; a second process is
 * refused with a message naming the holder and touches nothing else.
 *
 * The lock is the kernel's (an open-file-description `fcntl` lock on Linux, `flock` on macOS, through
 * fs-native-extensions): it belongs to the open file, so it goes away when the process ends however it ends
 * (a SIGKILL, a crash, the machine's power) and a stale lock cannot exist. The file's content, the holder's pid,
 * host, start time and command, is for people reading the refusal; it is never what decides.
 *
 * Being the open file's, the lock also refuses a second opening in the same process (two platforms on one data
 * directory in a test): the first must release it.
 */
import { open, readFile, type FileHandle } from 'node:fs/promises';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { tryLock, unlock } from 'fs-native-extensions';

export const LOCK_FILE = 'service.lock';

export interface LockHolder {
  pid: number;
  host: string;
  /** ISO time the holder took the lock. */
  startedAt: string;
  /** What holds it: `npm start`'s roles, a command (`unprocessable`, `backup`, ...). */
  command: string;
}

export interface DataDirLock {
  readonly dir: string;
  readonly holder: LockHolder;
  /** Give the lock back (idempotent). The process ending gives it back too. */
  release(): Promise<void>;
}

export class DataDirLockedError extends Error {
  override readonly name = 'DataDirLockedError';
  constructor(
    readonly dir: string,
    readonly holder: LockHolder | null,
  ) {
    super(
      `the data directory ${dir} is in use by ${describeHolder(holder)}; ` +
        'one process owns a data directory at a time (stop it first, or give this one another DATA_DIR). Nothing was opened.',
    );
  }
}

export function describeHolder(holder: LockHolder | null): string {
  if (!holder) return 'another process (its details are being written)';
  return `pid ${holder.pid} on ${holder.host} (${holder.command}, since ${holder.startedAt})`;
}

/** Processes' own locks, kept referenced: a FileHandle that is garbage-collected is closed, and its lock with it. */
const held = new Set<FileHandle>();

/** Take the data directory's lock or throw DataDirLockedError. Creates the directory when missing. */
export async function lockDataDir(dir: string, command: string): Promise<DataDirLock> {
  const abs = path.resolve(dir);
  await mkdir(abs, { recursive: true });
  const file = path.join(abs, LOCK_FILE);
  // 'a+': created when missing, never truncated before the lock is ours (the holder's details stay readable).
  const handle = await open(file, 'a+', 0o644);
  let granted: boolean;
  try {
    granted = tryLock(handle.fd);
  } catch (err) {
    await handle.close();
    throw err;
  }
  if (!granted) {
    await handle.close();
    throw new DataDirLockedError(abs, await readLockHolder(abs));
  }
  held.add(handle);
  const holder: LockHolder = { pid: process.pid, host: os.hostname(), startedAt: new Date().toISOString(), command };
  await handle.truncate(0);
  await handle.write(`${JSON.stringify(holder)}\n`, 0);
  await handle.sync();
  let released = false;
  return {
    dir: abs,
    holder,
    async release() {
      if (released) return;
      released = true;
      held.delete(handle);
      // The details go first, so a reader never sees a holder that is gone; then the lock, with the file's close.
      await handle.truncate(0).catch(() => undefined);
      try {
        unlock(handle.fd);
      } finally {
        await handle.close();
      }
    },
  };
}

/** Who holds (or last held) the lock, from the file's content; null when unreadable or empty. */
export async function readLockHolder(dir: string): Promise<LockHolder | null> {
  try {
    const text = await readFile(path.join(path.resolve(dir), LOCK_FILE), 'utf8');
    const h = JSON.parse(text) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || typeof h.host !== 'string') return null;
    return { pid: h.pid, host: h.host, startedAt: String(h.startedAt), command: String(h.command) };
  } catch {
    return null;
  }
}
