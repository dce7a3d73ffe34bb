/**
 * A consistent copy of the data directory made by the process that owns it (the lock's holder), for
 * `npm run backup` while the service runs (backup.ts asks for it over control-socket.ts).
 *
 * The copy is staged inside the data directory (`.backup-<random>/`, the same file system, so files that never
 * change in place are hard links that cost nothing) and removed once the backup has archived it. Order:
 *   1. the bus's log (its commits), then PGlite, then chDB: a store copied after the bus holds at least what the
 *      copied commits say was processed, so a restore at worst replays events the stores already hold, and the
 *      pipelines are idempotent (processor/README.md): nothing is lost or counted twice;
 *   2. every other part (artifacts, mail, what a later version adds) as its files: they are written once under a
 *      temporary name and renamed, never changed in place, so hard links are a copy. A part of the directory this
 *      process knows nothing about is copied too: the backup is the directory, not a list.
 * An engine part that this process has not opened (a command holding the lock for PGlite alone) is copied as
 * files: no one writes it while the lock is held.
 */
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Backend } from '../config.ts';
import type { Logger } from '../logger.ts';
import { startControlSocket, CONTROL_SOCKET, type ControlSocket, type StagedCopy } from './control-socket.ts';
import { EMBEDDED_ENGINE } from './damaged-data-dir.ts';
import { LOCK_FILE } from './data-dir-lock.ts';
import { mirrorTree, type SkipRule } from './file-tree.ts';

const STAGING_PREFIX = '.backup-';
export const RESTORING_PREFIX = '.restoring-';

/** Names at the top of a data directory that are never data: the lock, the control socket, copies in the making. */
export function isReserved(name: string): boolean {
  return name === LOCK_FILE || name === CONTROL_SOCKET || name.startsWith(STAGING_PREFIX) || name.startsWith(RESTORING_PREFIX);
}

/**
 * What a backup leaves out, by path from the data directory's top: the reserved names, chDB's scratch (`tmp/`, and
 * `shadow/`, where its freezes are made), and files named `*.tmp` (a write in progress, renamed when complete).
 */
export const leftOut: SkipRule = (rel, kind) => {
  if (!rel.includes('/') && isReserved(rel)) return true;
  if (rel === 'chdb/tmp' || rel === 'chdb/shadow') return true;
  return kind === 'file' && rel.endsWith('.tmp');
};

/** Below a part: the same rule, for a walk that starts at the part. */
const leftOutBelow =
  (part: string): SkipRule =>
  (rel, kind) =>
    leftOut(`${part}/${rel}`, kind);

/** The engines' parts, in the order they are copied. */
const ENGINE_ORDER: Backend[] = ['bus', 'relational', 'analytical'];

export interface Snapshottable {
  snapshot?(dest: string): Promise<void>;
}

/**
 * Stage a consistent copy of `dataDir`. `engines` are the adapters this process opened on the data directory (by
 * backend); each copies its own part with its `snapshot`.
 */
export async function snapshotDataDir(dataDir: string, engines: Partial<Record<Backend, Snapshottable>>): Promise<StagedCopy> {
  const stage = await mkdtemp(path.join(dataDir, STAGING_PREFIX));
  const parts: StagedCopy['parts'] = [];
  const remove = () => rm(stage, { recursive: true, force: true });
  try {
    const names = (await readdir(dataDir)).filter((n) => !isReserved(n)).sort();
    const engineParts = new Map(ENGINE_ORDER.map((b) => [EMBEDDED_ENGINE[b]!.sub, b]));
    // 1. the engines, in order
    for (const [sub, backend] of engineParts) {
      if (!names.includes(sub)) continue;
      const open = engines[backend];
      if (open?.snapshot) {
        await open.snapshot(path.join(stage, sub));
        parts.push({ name: sub, how: HOW[backend]! });
      } else {
        await mirrorTree(path.join(dataDir, sub), path.join(stage, sub), 'copy', leftOutBelow(sub));
        parts.push({ name: sub, how: 'copied as files (not open: nothing writes it)' });
      }
    }
    // 2. the rest, whatever it is
    for (const name of names.filter((n) => !engineParts.has(n))) {
      const kind = (await lstat(path.join(dataDir, name))).isDirectory() ? 'dir' : 'file';
      if (leftOut(name, kind)) continue;
      await mirrorTree(path.join(dataDir, name), path.join(stage, name), 'link', leftOutBelow(name));
      parts.push({ name, how: 'files' });
    }
    return { dir: stage, parts, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

const HOW: Partial<Record<Backend, string>> = {
  bus: "each topic's log up to its last synced record, and each group's commit",
  relational: "CHECKPOINT and a copy of its files on PGlite's thread, between statements",
  analytical: "each table's parts frozen (ALTER TABLE ... FREEZE), and the metadata",
};

/**
 * The owner's side, started where the platform takes the lock (platform.ts): removes what a crash left (a stale
 * socket, a staged copy) and answers `npm run backup` on DATA_DIR/control.sock with snapshotDataDir.
 */
export async function answerBackups(
  dataDir: string,
  logger: Logger,
  adapters: Partial<Record<Backend, Snapshottable>>,
  openOnDataDir: readonly Backend[],
): Promise<ControlSocket> {
  for (const name of await readdir(dataDir)) {
    if (name.startsWith(STAGING_PREFIX)) await rm(path.join(dataDir, name), { recursive: true, force: true });
  }
  const engines = Object.fromEntries(openOnDataDir.map((b) => [b, adapters[b]]));
  return startControlSocket(dataDir, logger, () => snapshotDataDir(dataDir, engines));
}
