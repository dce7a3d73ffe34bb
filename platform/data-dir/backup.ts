/**
 * `npm run backup -- <file>`: a consistent copy of the embedded data directory in one file, whether the service runs
 * or not.
 *   - The lock is free (nothing runs on the directory): the backup takes it itself, so nothing writes, and archives
 *     the files; closed engines' files are consistent as they are.
 *   - The lock is held: the holder is asked, over DATA_DIR/control.sock, for a copy it makes consistent while it
 *     serves (snapshot.ts), and that copy is archived, then released.
 * The file is a gzip'd tar (backup-manifest.ts), written under a temporary name beside it and renamed once complete
 * and synced, readable by its owner only (it holds every secret of the service). It is never written inside the
 * data directory: a backup there would be lost with the directory and swell every next backup.
 */
import { createWriteStream } from 'node:fs';
import { createGzip } from 'node:zlib';
import { lstat, open, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Header, Pack } from 'tar';
import { BACKUP_FORMAT, BACKUP_FORMAT_VERSION, countParts, DATA_PREFIX, MANIFEST_NAME, type BackupManifest, type BackupPart } from './backup-manifest.ts';
import { ControlSocketUnreachableError, requestSnapshot } from './control-socket.ts';
import { DataDirLockedError, describeHolder, lockDataDir, type LockHolder } from './data-dir-lock.ts';
import { walkTree } from './file-tree.ts';
import { serviceBuild, type ServiceBuild } from './service-build.ts';
import { leftOut } from './snapshot.ts';

/** What the operator has to change before a backup can be made (exit 1 with the message alone). */
export class BackupRefusedError extends Error {
  override readonly name = 'BackupRefusedError';
}

export interface BackupResult {
  file: string;
  /** Bytes of the written file (compressed). */
  archiveBytes: number;
  manifest: BackupManifest;
}

const inside = (dir: string, p: string) => {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

export async function backupDataDir(dataDir: string, file: string): Promise<BackupResult> {
  const dir = path.resolve(dataDir);
  const out = path.resolve(file);
  if (inside(dir, out)) {
    throw new BackupRefusedError(
      `the backup file ${out} is inside the data directory ${dir}: write it elsewhere (a backup inside what it backs up is lost with it)`,
    );
  }
  if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new BackupRefusedError(`there is no data directory at ${dir} (DATA_DIR)`);
  if (!(await stat(path.dirname(out)).catch(() => undefined))?.isDirectory()) {
    throw new BackupRefusedError(`the folder of the backup file, ${path.dirname(out)}, does not exist`);
  }

  let lock: Awaited<ReturnType<typeof lockDataDir>>;
  try {
    lock = await lockDataDir(dir, 'npm run backup');
  } catch (err) {
    if (err instanceof DataDirLockedError) return fromRunningService(dir, out, err.holder);
    throw err;
  }
  try {
    return await writeArchive(dir, out, { serviceRunning: false, service: await serviceBuild(), how: () => 'files (the service was stopped)' }, dir);
  } finally {
    await lock.release();
  }
}

async function fromRunningService(dir: string, out: string, holder: LockHolder | null): Promise<BackupResult> {
  let asked: Awaited<ReturnType<typeof requestSnapshot>>;
  try {
    asked = await requestSnapshot(dir);
  } catch (err) {
    if (err instanceof ControlSocketUnreachableError) {
      throw new BackupRefusedError(
        `the data directory ${dir} is in use by ${describeHolder(holder)}, which does not answer backups (${err.message}; ` +
          'a version before online backups, or a data directory whose path is too long for a socket): stop it and run the backup again',
      );
    }
    throw new BackupRefusedError(`the service holding ${dir} (${describeHolder(holder)}) could not make a copy: ${(err as Error).message}`);
  }
  try {
    const how = new Map(asked.reply.parts.map((p) => [p.name, p.how]));
    return await writeArchive(
      asked.reply.dir,
      out,
      { serviceRunning: true, holder: describeHolder(holder), service: asked.reply.service, how: (name) => how.get(name) ?? 'files' },
      dir,
    );
  } finally {
    await asked.done();
  }
}

interface ArchiveMeta {
  serviceRunning: boolean;
  holder?: string;
  service: ServiceBuild;
  how(part: string): string;
}

/** Archive the data directory at `root` (the directory itself, or a staged copy of `dataDir`) into `out`. */
async function writeArchive(root: string, out: string, meta: ArchiveMeta, dataDir: string): Promise<BackupResult> {
  const entries = await walkTree(root, leftOut);
  const parts: BackupPart[] = [...countParts(entries)].map(([name, c]) => ({ name, ...c, how: meta.how(name) }));
  if (!parts.length) throw new BackupRefusedError(`the data directory ${dataDir} holds no data yet: there is nothing to back up`);
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    formatVersion: BACKUP_FORMAT_VERSION,
    createdAt: new Date().toISOString(),
    service: meta.service,
    source: { dataDir, host: os.hostname(), serviceRunning: meta.serviceRunning, ...(meta.holder ? { holder: meta.holder } : {}) },
    parts,
  };

  const partial = path.join(path.dirname(out), `.${path.basename(out)}.${process.pid}.partial`);
  try {
    const gzip = createGzip();
    // The manifest is the archive's first entry, so a restore knows what it holds before reading the rest.
    gzip.write(manifestEntry(manifest));
    const written = pipeline(gzip, createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
    const pack = new Pack({ cwd: root, prefix: DATA_PREFIX, portable: true, noDirRecurse: true });
    // node-tar's streams are Minipass streams: piped (which ends gzip when the pack ends), not given to pipeline().
    pack.on('error', (err: unknown) => gzip.destroy(err as Error));
    pack.pipe(gzip);
    for (const e of entries) pack.add(e.rel);
    pack.end();
    await written;
    await syncPath(partial, 'r+');
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
  await rename(partial, out);
  // The rename itself survives a crash once the folder is synced.
  await syncPath(path.dirname(out), 'r');
  return { file: out, archiveBytes: (await lstat(out)).size, manifest };
}

async function syncPath(p: string, flags: string): Promise<void> {
  const handle = await open(p, flags);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A tar entry for the manifest: a header block, the JSON, zeros to the next 512-byte block. */
function manifestEntry(manifest: BackupManifest): Buffer {
  const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  const header = new Header({ path: MANIFEST_NAME, mode: 0o644, size: body.length, mtime: new Date(manifest.createdAt), type: 'File' });
  header.encode();
  return Buffer.concat([header.block!, body, Buffer.alloc((512 - (body.length % 512)) % 512)]);
}
