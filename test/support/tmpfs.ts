import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A small file system of its own (tmpfs) to fill on purpose: the tests of a full disk (issue 36). Mounting needs root,
 * which CI has; elsewhere the tests that need it are skipped, saying why.
 */
export const TMPFS_SKIP_REASON =
  process.getuid?.() === 0 ? undefined : 'mounting a tmpfs to fill needs root (CI runs as root; run the test with sudo to try it locally)';

export interface Tmpfs {
  dir: string;
  /** Bytes an unprivileged writer can still use. */
  freeBytes(): number;
  /** Write a filler file until at most `leaveBytes` are free (0: until the file system refuses another byte). */
  fill(leaveBytes?: number): void;
  /** Remove the filler: the space comes back. */
  unfill(): void;
  unmount(): void;
}

const MB = 1024 * 1024;

export function mountTmpfs(sizeMb: number, opts: { inodes?: number } = {}): Tmpfs {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tmpfs-'));
  const options = [`size=${sizeMb}m`, ...(opts.inodes ? [`nr_inodes=${opts.inodes}`] : [])].join(',');
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  const fillers: string[] = [];
  const freeBytes = () => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    freeBytes,
    fill(leaveBytes = 0) {
      const file = path.join(dir, `filler-${fillers.length}`);
      fillers.push(file);
      const fd = openSync(file, 'w');
      try {
        for (const chunk of [MB, 64 * 1024, 4096, 1]) {
          const buf = Buffer.alloc(chunk);
          while (freeBytes() - chunk >= leaveBytes) {
            try {
              writeSync(fd, buf);
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw err;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    unfill() {
      for (const f of fillers.splice(0)) unlinkSync(f);
    },
    unmount() {
      execFileSync('umount', ['-l', dir]);
      rmdirSync(dir);
    },
  };
}
