import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DataDirLockedError, LOCK_FILE, lockDataDir, readLockHolder } from './data-dir-lock.ts';

const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), 'lock-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A child process that takes the lock, says so on stdout, and then waits to be killed. */
function childHolder(dir: string) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('${path.join(import.meta.dirname, 'data-dir-lock.ts')}').then(m => m.lockDataDir(${JSON.stringify(dir)}, 'child holder')).then(() => { process.stdout.write('locked\\n'); setInterval(() => {}, 1000); })`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const locked = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => b.toString().includes('locked') && resolve());
    child.on('exit', (code) => reject(new Error(`holder exited early (${code})`)));
  });
  return { child, locked };
}

describe('one owner per data directory', () => {
  it('a second lock on the same directory is refused, naming the holder; after release it is granted', async () => {
    const dir = await tempDir();
    const first = await lockDataDir(dir, 'npm start (all roles)');
    const refused = await lockDataDir(dir, 'unprocessable').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).holder).toMatchObject({ pid: process.pid, host: os.hostname(), command: 'npm start (all roles)' });
    expect((refused as Error).message).toContain(`pid ${process.pid}`);
    expect((refused as Error).message).toContain('npm start (all roles)');
    await first.release();
    const second = await lockDataDir(dir, 'unprocessable');
    expect(await readLockHolder(dir)).toMatchObject({ command: 'unprocessable' });
    await second.release();
  });

  it('a released lock leaves no holder behind', async () => {
    const dir = await tempDir();
    const lock = await lockDataDir(dir, 'backup');
    await lock.release();
    await lock.release();
    expect(await readFile(path.join(dir, LOCK_FILE), 'utf8')).toBe('');
    expect(await readLockHolder(dir)).toBeNull();
  });

  it('a holder killed with SIGKILL leaves no stale lock: the kernel gave it back', async () => {
    const dir = await tempDir();
    const { child, locked } = childHolder(dir);
    await locked;
    const refused = await lockDataDir(dir, 'second start').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).holder).toMatchObject({ pid: child.pid, command: 'child holder' });
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    // The dead holder's details are still in the file; the lock is not, and that is what decides.
    expect(await readLockHolder(dir)).toMatchObject({ pid: child.pid });
    const lock = await lockDataDir(dir, 'after the kill');
    expect(await readLockHolder(dir)).toMatchObject({ pid: process.pid, command: 'after the kill' });
    await lock.release();
  });
});
