/**
 * `npm run restore -- <file>`: a backup (backup.ts) back into an EMPTY data directory.
 *   1. The directory must be empty (or missing): a restore never mixes a backup's files with others, nor replaces
 *      data someone may still need. A non-empty one is refused, naming what is there.
 *   2. The whole file is read before anything is written: its manifest first (an unknown format is refused), then
 *      every entry, which must be a file, a directory or a link inside `data/` (never a path or a link that leaves
 *      the data directory, never a name the directory reserves).
 *   3. Under the data directory's lock (no service starts on it meanwhile), it is extracted into a folder inside
 *      it, counted against the manifest (an incomplete or damaged file restores nothing), and moved into place.
 */
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { extract, Parser, type ReadEntry } from 'tar';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BackupManifestSchema,
  countParts,
  DATA_PREFIX,
  MANIFEST_NAME,
  MAX_MANIFEST_BYTES,
  type BackupManifest,
} from './backup-manifest.ts';
import { LOCK_FILE, lockDataDir } from './data-dir-lock.ts';
import { walkTree } from './file-tree.ts';
import { isReserved, RESTORING_PREFIX } from './snapshot.ts';

/** What the operator has to change before the restore can run; nothing was changed. */
export class RestoreRefusedError extends Error {
  override readonly name = 'RestoreRefusedError';
}

export async function restoreDataDir(file: string, dataDir: string): Promise<{ dir: string; manifest: BackupManifest }> {
  const src = path.resolve(file);
  const dir = path.resolve(dataDir);
  if (!(await stat(src).catch(() => undefined))?.isFile()) throw new RestoreRefusedError(`there is no backup file at ${src}`);
  await refuseUnlessEmpty(dir);
  const manifest = await checkArchive(src);

  const lock = await lockDataDir(dir, 'npm run restore');
  const staging = path.join(dir, `${RESTORING_PREFIX}${randomBytes(4).toString('hex')}`);
  try {
    // A restore killed before it moved anything left only its staging folder: under the lock no other restore runs,
    // so it is removed, and the directory is as empty as it was.
    for (const name of await readdir(dir)) if (name.startsWith(RESTORING_PREFIX)) await rm(path.join(dir, name), { recursive: true, force: true });
    await refuseUnlessEmpty(dir);
    await mkdir(staging, { mode: 0o700 });
    await extract({ file: src, cwd: staging, strip: 1, strict: true, preserveOwner: false, filter: (p) => p !== MANIFEST_NAME });
    const found = countParts(await walkTree(staging));
    const wrong = manifest.parts.flatMap((p) => {
      const got = found.get(p.name);
      return got?.files === p.files && got.bytes === p.bytes ? [] : [`${p.name}: ${got?.files ?? 0} files, ${got?.bytes ?? 0} bytes`];
    });
    const extra = [...found.keys()].filter((name) => !manifest.parts.some((p) => p.name === name));
    if (wrong.length || extra.length) {
      throw new RestoreRefusedError(
        `${src} does not hold what its manifest says (${[...wrong, ...extra.map((n) => `${n}: not in the manifest`)].join('; ')}): ` +
          'the file is incomplete or damaged. Nothing was restored.',
      );
    }
    for (const name of await readdir(staging)) await rename(path.join(staging, name), path.join(dir, name));
  } finally {
    await rm(staging, { recursive: true, force: true });
    await lock.release();
  }
  return { dir, manifest };
}

/**
 * Refuse a data directory that holds anything but the lock's file, a killed restore's staging folder (removed under
 * the lock), and an empty lost+found (a new volume's).
 */
async function refuseUnlessEmpty(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => undefined);
  if (!st) return;
  if (!st.isDirectory()) throw new RestoreRefusedError(`${dir} is not a directory`);
  const there: string[] = [];
  for (const name of (await readdir(dir)).sort()) {
    if (name === LOCK_FILE || name.startsWith(RESTORING_PREFIX)) continue;
    if (name === 'lost+found' && !(await readdir(path.join(dir, name)).catch(() => ['?'])).length) continue;
    there.push(name);
  }
  if (!there.length) return;
  const shown = there.length > 12 ? `${there.slice(0, 12).join(', ')} and ${there.length - 12} more` : there.join(', ');
  throw new RestoreRefusedError(
    `the data directory ${dir} is not empty: it holds ${shown}. A restore goes into an empty directory only, so that no data ` +
      'there is mixed with the backup or lost: stop the service, move the directory aside (or point DATA_DIR at a new one) ' +
      'and run the restore again. Nothing was changed.',
  );
}

/** Read the whole archive: its manifest (returned) and every entry's kind and path, before anything is written. */
async function checkArchive(src: string): Promise<BackupManifest> {
  const notOurs = (why: string) => new RestoreRefusedError(`${src} is not a backup made by \`npm run backup\` (${why}). Nothing was changed.`);
  let manifestText: string | undefined;
  let problem: RestoreRefusedError | undefined;
  let index = 0;

  const input = createReadStream(src);
  const parser = new Parser({ strict: true });
  await new Promise<void>((resolve, reject) => {
    const stop = (err: RestoreRefusedError) => {
      problem ??= err;
      input.unpipe(parser);
      input.destroy();
      resolve();
    };
    parser.on('entry', (entry: ReadEntry) => {
      if (problem) return entry.resume();
      if (index++ === 0) {
        if (entry.path !== MANIFEST_NAME || entry.type !== 'File' || entry.size > MAX_MANIFEST_BYTES) {
          entry.resume();
          return stop(notOurs(`it does not start with ${MANIFEST_NAME}`));
        }
        const chunks: Buffer[] = [];
        entry.on('data', (c: Buffer) => chunks.push(c));
        entry.on('end', () => {
          manifestText = Buffer.concat(chunks).toString('utf8');
          const err = manifestProblem(src, manifestText, notOurs);
          if (err) stop(err);
        });
        return;
      }
      const why = entryProblem(entry);
      entry.resume();
      if (why) stop(new RestoreRefusedError(`${src} holds an entry a restore does not write (${why}). Nothing was changed.`));
    });
    parser.on('end', () => resolve());
    parser.on('error', (err: Error) => (problem ? resolve() : reject(notOurs(`it cannot be read as a .tar.gz: ${err.message}`))));
    input.on('error', (err) => reject(notOurs(err.message)));
    input.pipe(parser);
  });
  if (problem) throw problem;
  if (manifestText === undefined) throw notOurs(`it does not start with ${MANIFEST_NAME}`);
  return BackupManifestSchema.parse(JSON.parse(manifestText));
}

/** Why a manifest cannot be restored from by this version, or undefined when it can. */
function manifestProblem(src: string, text: string, notOurs: (why: string) => RestoreRefusedError): RestoreRefusedError | undefined {
  let raw: { format?: unknown; formatVersion?: unknown; service?: { version?: unknown; commit?: unknown } };
  try {
    raw = JSON.parse(text);
  } catch {
    return notOurs(`${MANIFEST_NAME} is not JSON`);
  }
  if (raw?.format !== BACKUP_FORMAT) return notOurs(`its format is ${JSON.stringify(raw?.format)}, not "${BACKUP_FORMAT}"`);
  if (raw.formatVersion !== BACKUP_FORMAT_VERSION) {
    const by = [raw.service?.version, raw.service?.commit].filter((v) => typeof v === 'string').join(', ');
    return new RestoreRefusedError(
      `${src} is a backup of format version ${JSON.stringify(raw.formatVersion)}, and this version of the service reads format ` +
        `${BACKUP_FORMAT_VERSION} only: restore it with the version that made it${by ? ` (${by})` : ''}. Nothing was changed.`,
    );
  }
  const parsed = BackupManifestSchema.safeParse(raw);
  if (!parsed.success) return notOurs(`its manifest is damaged: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return undefined;
}

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

/** An archive entry must be a file, a directory or a link below `data/`, and a link must stay inside it. */
function entryProblem(entry: ReadEntry): string | undefined {
  const p = entry.path.replace(/\/+$/, '');
  if (!ALLOWED_TYPES.has(entry.type)) return `${p} is a ${entry.type}`;
  if (p === DATA_PREFIX && entry.type === 'Directory') return undefined;
  if (!p.startsWith(`${DATA_PREFIX}/`)) return `${p} is outside ${DATA_PREFIX}/`;
  const rel = p.slice(DATA_PREFIX.length + 1);
  if (!rel || path.posix.isAbsolute(rel) || path.posix.normalize(rel) !== rel || rel.split('/').includes('..')) return `${p} is not a plain path`;
  if (isReserved(rel.split('/')[0]!)) return `${p} is a name the data directory reserves`;
  if (entry.type === 'SymbolicLink') {
    const target = entry.linkpath ?? '';
    const to = path.posix.normalize(path.posix.join(path.posix.dirname(rel), target));
    if (!target || path.posix.isAbsolute(target) || to === '..' || to.startsWith('../')) return `${p} links to ${target}, outside the data directory`;
  }
  if (entry.type === 'Link') {
    const target = entry.linkpath ?? '';
    if (!target.startsWith(`${DATA_PREFIX}/`) || path.posix.normalize(target) !== target || target.split('/').includes('..')) {
      return `${p} is a hard link to ${target}, outside the data directory`;
    }
  }
  return undefined;
}
