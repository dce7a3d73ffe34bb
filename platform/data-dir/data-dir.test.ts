import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, ROLE_BACKENDS } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createPlatform } from '../platform.ts';
import { DataDirDamagedError } from './damaged-data-dir.ts';
import { DataDirLockedError, lockDataDir } from './data-dir-lock.ts';

/**
 * The data directory in the composition of a process (platform.ts): the lock comes before any engine, a role opens
 * only the ports it uses, and an engine that cannot open its files is named with the way back. chDB binds one data
 * directory per process, so these tests open every embedded engine but chDB; the e2e test runs the whole service.
 */
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
const dataDir = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), 'data-dir-'));
  dirs.push(d);
  return d;
};
const logger = createLogger('silent', 'test');
const configFor = (dir: string) => loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });

describe('the data directory and the platform', () => {
  it('a process refused by the lock opens nothing: no engine folder appears', async () => {
    const dir = await dataDir();
    const holder = await lockDataDir(dir, 'npm start (every role, port 8080)');
    const refused = await createPlatform(configFor(dir), logger, {}, { backends: ROLE_BACKENDS.ingest, command: 'the ingest role' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirLockedError);
    expect((refused as Error).message).toContain('npm start (every role, port 8080)');
    expect(await readdir(dir)).toEqual(['service.lock']);
    await holder.release();
  });

  it('an edge opens only its ports: the embedded Postgres and bus, never chDB or the mail folder', async () => {
    const dir = await dataDir();
    const platform = await createPlatform(configFor(dir), logger, {}, { backends: ROLE_BACKENDS.ingest, command: 'the ingest role' });
    try {
      const made = await readdir(dir);
      expect(made).toContain('pglite');
      expect(made).not.toContain('chdb');
      expect(made).not.toContain('mail');
      expect(platform.db.adapter).toBe('pglite');
      expect(platform.analytics.adapter).toBe('not opened');
      expect(() => platform.analytics.query('SELECT 1')).toThrow(/the ingest role does not open the analytical port/);
      expect(() => platform.mailer.send).toThrow(/does not open the mail port/);
      // While it runs, the directory is its own.
      await expect(lockDataDir(dir, 'a second edge')).rejects.toBeInstanceOf(DataDirLockedError);
    } finally {
      await platform.close();
    }
    // Closed: the lock is free again.
    await (await lockDataDir(dir, 'after close')).release();
  });

  it('a role on servers only takes no lock and creates nothing in the data directory', async () => {
    const dir = path.join(await dataDir(), 'never-made');
    // The file mailer is the one embedded part an edge never opens; a builder opens no embedded part here at all.
    const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', SMTP_URL: 'smtp://127.0.0.1:1' });
    const { createPgliteStore } = await import('../adapters/relational/pglite-store.ts');
    const { createInProcessBus } = await import('../adapters/bus/in-process-bus.ts');
    const platform = await createPlatform(
      config,
      logger,
      { db: await createPgliteStore(), bus: createInProcessBus({ logDir: path.join(await dataDir(), 'bus') }) },
      { backends: ['relational', 'bus', 'mail'] },
    );
    await platform.close();
    expect(existsSync(dir)).toBe(false);
  });

  it('a damaged embedded Postgres is refused by name with the restore command, and leaves the directory free', async () => {
    const dir = await dataDir();
    const first = await createPlatform(configFor(dir), logger, {}, { backends: ['relational'] });
    await first.db.query('CREATE TABLE kept (id int)');
    await first.close();
    // The control file Postgres starts from, overwritten: what a second writer or a torn disk leaves.
    await writeFile(path.join(dir, 'pglite', 'global', 'pg_control'), Buffer.alloc(8192));
    const refused = await createPlatform(configFor(dir), logger, {}, { backends: ['relational'] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataDirDamagedError);
    expect((refused as Error).message).toContain('the embedded Postgres (PGlite) could not open its files in');
    expect((refused as Error).message).toContain(path.join(dir, 'pglite'));
    expect((refused as Error).message).toContain('npm run restore -- <backup file>');
    await (await lockDataDir(dir, 'restore')).release();
  });
});
