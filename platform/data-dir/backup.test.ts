import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, truncate, writeFile, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { create as createTar } from 'tar';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config.ts';
import { createLogger } from '../logger.ts';
import { createPlatform, type Platform } from '../platform.ts';
import { backupDataDir, BackupRefusedError } from './backup.ts';
import { BACKUP_FORMAT, MANIFEST_NAME } from './backup-manifest.ts';
import { CONTROL_SOCKET, startControlSocket } from './control-socket.ts';
import { lockDataDir } from './data-dir-lock.ts';
import { walkTree } from './file-tree.ts';
import { restoreDataDir, RestoreRefusedError } from './restore.ts';
import { leftOut, snapshotDataDir } from './snapshot.ts';

/**
 * Backups and restore of the data directory (issue 36), on the embedded engines of one process: PGlite and the bus's
 * log (chDB binds one data directory per process, so its copy is tested in chdb-snapshot.test.ts and with the whole
 * service in test/e2e/backup.e2e.test.ts). With the owner stopped and while it writes; restore only into an empty
 * directory, only from a whole backup of a known format; the owner's control socket keeps serving whatever it is sent.
 */
const dirs: string[] = [];
const tempDir = async (prefix = 'backup-') => {
  const d = await mkdtemp(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
const logger = createLogger('silent', 'test');
const open = (dir: string, command = 'npm start (test)') =>
  createPlatform(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), logger, {}, { backends: ['relational', 'bus', 'mail'], command });

/** What a restore must bring back: every path, its kind, its bytes' hash, a link's target. */
async function fingerprint(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await walkTree(dir, leftOut)) {
    const p = path.join(dir, e.rel);
    if (e.kind === 'file')
      out.push(
        `${e.rel} ${createHash('sha256')
          .update(await readFile(p))
          .digest('hex')}`,
      );
    else if (e.kind === 'symlink') out.push(`${e.rel} -> ${await readlink(p)}`);
    else out.push(`${e.rel}/`);
  }
  return out;
}

async function seed(platform: Platform, rows: number): Promise<void> {
  await platform.db.query('CREATE TABLE IF NOT EXISTS kept (id serial PRIMARY KEY, what text NOT NULL)');
  await platform.db.query('INSERT INTO kept (what) SELECT $1 FROM generate_series(1, $2)', ['seeded', rows]);
  await platform.bus.publish('backup.test', [{ key: 'k', value: Buffer.from('acknowledged before the backup') }]);
}

const countKept = async (p: Platform) => (await p.db.query<{ n: number }>('SELECT count(*)::int AS n FROM kept')).rows[0]!.n;

async function busMessages(p: Platform): Promise<string[]> {
  const seen: string[] = [];
  const sub = await p.bus.subscribe('backup.test', 'reader', async (ms) => void seen.push(...ms.map((m) => m.value.toString())));
  for (let i = 0; i < 500 && !seen.length; i++) await new Promise((r) => setTimeout(r, 10));
  await sub.stop();
  return seen;
}

describe('a backup with the service stopped', () => {
  it('restores into an empty directory file for file, every part of it, and the engines open on it', { timeout: 120_000 }, async () => {
    const dir = path.join(await tempDir(), 'data');
    const platform = await open(dir);
    await seed(platform, 300);
    await platform.mailer.send({ to: ['owner@example.com'], subject: 'an alert', text: 'kept' });
    await platform.close();
    // Parts the engines know nothing about: artifacts, a folder a later version adds, a file at the top, a link
    // (chDB keeps its tables behind relative links), and a write in progress (left out).
    await mkdir(path.join(dir, 'artifacts', 'dep_1', 'assets'), { recursive: true });
    await writeFile(path.join(dir, 'artifacts', 'dep_1', 'index.html'), '<h1>deployed</h1>');
    await writeFile(path.join(dir, 'artifacts', 'dep_1', 'assets', 'app.js'), 'console.log(1)');
    await mkdir(path.join(dir, 'sourcemaps', 'prj_1'), { recursive: true });
    await writeFile(path.join(dir, 'sourcemaps', 'prj_1', 'app.js.map'), '{"version":3}');
    await writeFile(path.join(dir, 'notes.txt'), 'a file at the top');
    await mkdir(path.join(dir, 'linked', 'store', 'x'), { recursive: true });
    await writeFile(path.join(dir, 'linked', 'store', 'x', 'part.bin'), Buffer.alloc(1000, 7));
    await mkdir(path.join(dir, 'linked', 'data'));
    await symlink('../store/x', path.join(dir, 'linked', 'data', 't'));
    await writeFile(path.join(dir, 'mail', 'unfinished.eml.tmp'), 'half a mess');

    const file = path.join(await tempDir(), 'nightly.tar.gz');
    const made = await backupDataDir(dir, file);
    expect(made.manifest).toMatchObject({ format: BACKUP_FORMAT, formatVersion: 1, source: { dataDir: dir, serviceRunning: false } });
    expect(made.manifest.parts.map((p) => p.name)).toEqual(['artifacts', 'bus', 'linked', 'mail', 'notes.txt', 'pglite', 'sourcemaps']);
    expect(made.manifest.parts.find((p) => p.name === 'artifacts')).toMatchObject({ files: 2, bytes: 17 + 14 });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    // The lock is given back, and nothing was left beside the file.
    await (await lockDataDir(dir, 'after the backup')).release();
    expect(await readdir(path.dirname(file))).toEqual(['nightly.tar.gz']);

    const restored = path.join(await tempDir(), 'restored');
    const back = await restoreDataDir(file, restored);
    expect(back.manifest.createdAt).toBe(made.manifest.createdAt);
    const original = await fingerprint(dir);
    expect(original.some((l) => l.startsWith('linked/data/t -> ../store/x'))).toBe(true);
    expect(original.some((l) => l.includes('.tmp'))).toBe(false);
    expect(await fingerprint(restored)).toEqual(original);

    const reopened = await open(restored);
    expect(await countKept(reopened)).toBe(300);
    expect(await busMessages(reopened)).toEqual(['acknowledged before the backup']);
    await reopened.close();
  });
});

describe('a backup while the service runs', () => {
  it('is made by the owner under writes: the restore holds what was written before it, and the owner keeps serving', { timeout: 120_000 }, async () => {
    const dir = path.join(await tempDir(), 'data');
    // A copy a crash left behind mid-backup: the next owner removes it.
    await mkdir(path.join(dir, '.backup-left-by-a-crash', 'pglite'), { recursive: true });
    const platform = await open(dir);
    expect(await readdir(dir)).not.toContain('.backup-left-by-a-crash');
    await seed(platform, 200);
    const socket = await stat(path.join(dir, CONTROL_SOCKET));
    expect(socket.isSocket()).toBe(true);
    expect(socket.mode & 0o777).toBe(0o600);

    // Writes go on while the copy is made.
    let writing = true;
    const writer = (async () => {
      while (writing) await platform.db.query("INSERT INTO kept (what) VALUES ('during the backup')");
    })();
    const before = await countKept(platform);
    const file = path.join(await tempDir(), 'online.tar.gz');
    const made = await backupDataDir(dir, file);
    writing = false;
    await writer;

    expect(made.manifest.source).toMatchObject({ serviceRunning: true });
    expect(made.manifest.source.holder).toContain(`pid ${process.pid}`);
    expect(made.manifest.source.holder).toContain('npm start (test)');
    expect(made.manifest.parts.find((p) => p.name === 'pglite')?.how).toContain('CHECKPOINT');
    expect(made.manifest.parts.find((p) => p.name === 'bus')?.how).toContain('last synced record');
    // The staged copy is gone once archived; the owner still holds the directory and serves.
    expect((await readdir(dir)).sort()).toEqual(['bus', 'control.sock', 'mail', 'pglite', 'service.lock']);
    const after = await countKept(platform);
    await platform.close();

    const restored = path.join(await tempDir(), 'restored');
    await restoreDataDir(file, restored);
    const reopened = await open(restored);
    const n = await countKept(reopened);
    expect(n).toBeGreaterThanOrEqual(before);
    expect(n).toBeLessThanOrEqual(after);
    expect(await busMessages(reopened)).toEqual(['acknowledged before the backup']);
    await reopened.close();
  });

  it('is refused, naming the holder, when the owner does not answer on its socket', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'notes.txt'), 'x');
    const holder = await lockDataDir(dir, 'an older version');
    const refused = await backupDataDir(dir, path.join(await tempDir(), 'b.tar.gz')).catch((e: unknown) => e);
    await holder.release();
    expect(refused).toBeInstanceOf(BackupRefusedError);
    expect((refused as Error).message).toContain(`pid ${process.pid}`);
    expect((refused as Error).message).toContain('an older version');
    expect((refused as Error).message).toContain('stop it and run the backup again');
  });
});

describe("the owner's copy", () => {
  it('takes the bus before the stores, then every other part whatever its name, and copies an engine not open as files', async () => {
    const dir = await tempDir();
    for (const part of ['artifacts', 'bus', 'chdb', 'pglite', 'zz-later-version']) {
      await mkdir(path.join(dir, part));
      await writeFile(path.join(dir, part, 'f'), part);
    }
    const order: string[] = [];
    const engine = (name: string) => ({
      async snapshot(dest: string) {
        order.push(name);
        await mkdir(dest);
        await writeFile(path.join(dest, 'f'), `${name} copy`);
      },
    });
    // This process opened the bus and PGlite; chDB's folder is no one's here.
    const copy = await snapshotDataDir(dir, { relational: engine('pglite'), bus: engine('bus') });
    expect(order).toEqual(['bus', 'pglite']);
    expect(copy.parts.map((p) => p.name)).toEqual(['bus', 'pglite', 'chdb', 'artifacts', 'zz-later-version']);
    expect(copy.parts.find((p) => p.name === 'chdb')?.how).toContain('not open');
    expect(await readFile(path.join(copy.dir, 'bus', 'f'), 'utf8')).toBe('bus copy');
    expect(await readFile(path.join(copy.dir, 'chdb', 'f'), 'utf8')).toBe('chdb');
    expect(await readFile(path.join(copy.dir, 'zz-later-version', 'f'), 'utf8')).toBe('zz-later-version');
    await copy.remove();
    expect((await readdir(dir)).sort()).toEqual(['artifacts', 'bus', 'chdb', 'pglite', 'zz-later-version']);
  });
});

describe('what a backup refuses', () => {
  it('a file inside the data directory, and a data directory that does not exist', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'notes.txt'), 'x');
    await expect(backupDataDir(dir, path.join(dir, 'inside.tar.gz'))).rejects.toThrow(/is inside the data directory/);
    await expect(backupDataDir(path.join(dir, 'nope'), path.join(await tempDir(), 'b.tar.gz'))).rejects.toThrow(/there is no data directory at/);
    expect(await readdir(dir)).toEqual(['notes.txt']);
  });
});

describe('what a restore refuses', () => {
  async function backupOf(files: Record<string, string>): Promise<string> {
    const dir = await tempDir();
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), text);
    }
    const file = path.join(await tempDir(), 'b.tar.gz');
    await backupDataDir(dir, file);
    return file;
  }

  /** An archive laid out by hand: `manifest` first (when given), then the tree under `root`. */
  async function handMade(manifest: object | undefined, build: (root: string) => Promise<void>): Promise<string> {
    const root = await tempDir();
    if (manifest) await writeFile(path.join(root, MANIFEST_NAME), JSON.stringify(manifest));
    await mkdir(path.join(root, 'data'));
    await build(path.join(root, 'data'));
    const file = path.join(await tempDir(), 'hand.tar.gz');
    await createTar({ gzip: true, file, cwd: root, portable: true }, [...(manifest ? [MANIFEST_NAME] : []), 'data']);
    return file;
  }

  const manifestFor = (parts: Array<{ name: string; files: number; bytes: number }>, formatVersion = 1) => ({
    format: BACKUP_FORMAT,
    formatVersion,
    createdAt: new Date().toISOString(),
    service: { version: '9.9.9' },
    source: { dataDir: '/elsewhere', host: 'h', serviceRunning: false },
    parts: parts.map((p) => ({ ...p, how: 'files' })),
  });

  it('a directory that is not empty, naming what is there, and changes nothing', async () => {
    const file = await backupOf({ 'mail/a.eml': 'a' });
    const dir = await tempDir();
    await mkdir(path.join(dir, 'pglite'));
    await writeFile(path.join(dir, 'notes.txt'), 'someone else’s');
    const refused = await restoreDataDir(file, dir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RestoreRefusedError);
    expect((refused as Error).message).toContain(`the data directory ${dir} is not empty: it holds notes.txt, pglite`);
    expect((await readdir(dir)).sort()).toEqual(['notes.txt', 'pglite']);
    // An empty directory, or one that does not exist yet, is restored into.
    const empty = await tempDir();
    await restoreDataDir(file, empty);
    expect(await readFile(path.join(empty, 'mail', 'a.eml'), 'utf8')).toBe('a');
    const missing = path.join(await tempDir(), 'new', 'data');
    await restoreDataDir(file, missing);
    expect(await readFile(path.join(missing, 'mail', 'a.eml'), 'utf8')).toBe('a');
  });

  it('a restore killed before it moved anything (SIGKILL) leaves a directory the next restore takes', async () => {
    const file = await backupOf({ 'mail/a.eml': 'a' });
    const dir = await tempDir();
    await mkdir(path.join(dir, '.restoring-0badc0de', 'pglite'), { recursive: true });
    await writeFile(path.join(dir, '.restoring-0badc0de', 'pglite', 'PG_VERSION'), '17');
    await restoreDataDir(file, dir);
    expect((await readdir(dir)).sort()).toEqual(['mail', 'service.lock']);
    expect(await readFile(path.join(dir, 'mail', 'a.eml'), 'utf8')).toBe('a');
  });

  it('a file that is not a backup: garbage, a tar.gz without a manifest, another format', async () => {
    const target = path.join(await tempDir(), 'data');
    const garbage = path.join(await tempDir(), 'garbage.tar.gz');
    await writeFile(garbage, Buffer.from(Array.from({ length: 4000 }, (_, i) => (i * 7919) % 251)));
    await expect(restoreDataDir(garbage, target)).rejects.toThrow(/is not a backup made by `npm run backup`/);

    const noManifest = await handMade(undefined, (root) => writeFile(path.join(root, 'x'), 'x'));
    await expect(restoreDataDir(noManifest, target)).rejects.toThrow(/does not start with backup-manifest.json/);

    const otherFormat = await handMade({ format: 'something-else', formatVersion: 1 }, (root) => writeFile(path.join(root, 'x'), 'x'));
    await expect(restoreDataDir(otherFormat, target)).rejects.toThrow(/its format is "something-else"/);

    const newer = await handMade(manifestFor([{ name: 'x', files: 1, bytes: 1 }], 2), (root) => writeFile(path.join(root, 'x'), 'x'));
    const refused = await restoreDataDir(newer, target).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RestoreRefusedError);
    expect((refused as Error).message).toContain('format version 2');
    expect((refused as Error).message).toContain('reads format 1 only');
    expect((refused as Error).message).toContain('9.9.9');
    // Nothing was made.
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('an entry that would leave the data directory, or take a name it reserves', async () => {
    const target = path.join(await tempDir(), 'data');
    const escaping = await handMade(manifestFor([{ name: 'evil', files: 1, bytes: 0 }]), (root) => symlink('../../../etc', path.join(root, 'evil')));
    await expect(restoreDataDir(escaping, target)).rejects.toThrow(/evil links to \.\.\/\.\.\/\.\.\/etc, outside the data directory/);
    const reserved = await handMade(manifestFor([{ name: 'service.lock', files: 1, bytes: 1 }]), (root) => writeFile(path.join(root, 'service.lock'), 'x'));
    await expect(restoreDataDir(reserved, target)).rejects.toThrow(/a name the data directory reserves/);
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a backup that is cut short or does not match its manifest restores nothing', async () => {
    const file = await backupOf({ 'artifacts/a.bin': 'y'.repeat(200_000), 'mail/b.eml': 'b' });
    const target = path.join(await tempDir(), 'data');
    const cut = path.join(await tempDir(), 'cut.tar.gz');
    await writeFile(cut, await readFile(file));
    await truncate(cut, Math.floor((await stat(file)).size / 2));
    await expect(restoreDataDir(cut, target)).rejects.toBeInstanceOf(RestoreRefusedError);
    await expect(stat(target)).rejects.toMatchObject({ code: 'ENOENT' });

    const lying = await handMade(manifestFor([{ name: 'mail', files: 2, bytes: 2 }]), async (root) => {
      await mkdir(path.join(root, 'mail'));
      await writeFile(path.join(root, 'mail', 'only-one.eml'), 'x');
    });
    await expect(restoreDataDir(lying, target)).rejects.toThrow(/mail: 1 files, 1 bytes.*incomplete or damaged/);
    // The lock's file is all that is left: the directory is still empty for the next attempt.
    expect(await readdir(target)).toEqual(['service.lock']);
  });
});

describe("the owner's control socket", () => {
  /** One connection: send lines, read the answers until the owner closes it. */
  function ask(file: string, lines: string[]): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const conn = net.createConnection(file);
      let text = '';
      conn.setEncoding('utf8');
      conn.on('data', (c: string) => (text += c));
      conn.on('error', reject);
      conn.on('close', () => resolve(text.split('\n').filter(Boolean)));
      conn.on('connect', () => conn.write(lines.join('')));
    });
  }

  it('answers anything unknown with an error and keeps serving; one copy at a time; a copy goes when its asker does', async () => {
    const dir = await tempDir('ctl-');
    // A socket file left by a crash: the lock's holder replaces it.
    await writeFile(path.join(dir, CONTROL_SOCKET), 'stale');
    const removed: string[] = [];
    let copies = 0;
    const control = await startControlSocket(dir, logger, async () => {
      const copy = path.join(dir, `.backup-${++copies}`);
      await mkdir(copy);
      return { dir: copy, parts: [], remove: async () => void removed.push(copy) };
    });
    const file = control.path!;
    expect(lstatSync(file).isSocket()).toBe(true);

    const [unknown] = await ask(file, ['{"op":"format the disk"}\n']);
    expect(JSON.parse(unknown!)).toEqual({ ok: false, error: expect.stringContaining('unknown request "format the disk"') });
    const [notJson] = await ask(file, ['hello\n']);
    expect(JSON.parse(notJson!)).toMatchObject({ ok: false, error: expect.stringContaining('one JSON object per line') });
    const [tooLong] = await ask(file, ['x'.repeat(10_000)]);
    expect(JSON.parse(tooLong!)).toMatchObject({ ok: false, error: expect.stringContaining('at most 4096 bytes') });

    // Still serving: a copy, held while its asker is connected; a second asker meanwhile is refused.
    const holder = net.createConnection(file);
    holder.setEncoding('utf8');
    const first = await new Promise<string>((resolve) => {
      holder.on('data', (c: string) => resolve(c));
      holder.on('connect', () => holder.write('{"op":"snapshot"}\n'));
    });
    expect(JSON.parse(first)).toMatchObject({ ok: true, dir: path.join(dir, '.backup-1') });
    const [busy] = await ask(file, ['{"op":"snapshot"}\n']);
    expect(JSON.parse(busy!)).toMatchObject({ ok: false, error: expect.stringContaining('already being made') });
    expect(removed).toEqual([]);
    holder.destroy();
    for (let i = 0; i < 500 && !removed.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(removed).toEqual([path.join(dir, '.backup-1')]);

    // Asked for and released with "done".
    const [made, done] = await ask(file, ['{"op":"snapshot"}\n{"op":"done"}\n']);
    expect(JSON.parse(made!)).toMatchObject({ ok: true, dir: path.join(dir, '.backup-2') });
    expect(JSON.parse(done!)).toEqual({ ok: true });
    expect(removed).toEqual([path.join(dir, '.backup-1'), path.join(dir, '.backup-2')]);

    await control.close();
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('is not opened where the path is too long for a Unix socket, and a backup says why it cannot ask', async () => {
    const dir = path.join(await tempDir('ctl-'), 'a-data-directory-whose-path-is-longer-than-a-unix-socket-path-may-be-on-linux-'.repeat(2));
    await mkdir(dir);
    await writeFile(path.join(dir, 'notes.txt'), 'x');
    const control = await startControlSocket(dir, logger, async () => {
      throw new Error('never asked');
    });
    expect(control.path).toBeUndefined();
    expect(await readdir(dir)).toEqual(['notes.txt']);
    const holder = await lockDataDir(dir, 'npm start (long path)');
    const refused = await backupDataDir(dir, path.join(await tempDir(), 'b.tar.gz')).catch((e: unknown) => e);
    await holder.release();
    await control.close();
    expect(refused).toBeInstanceOf(BackupRefusedError);
    expect((refused as Error).message).toContain('longer than a Unix socket');
  });
});
