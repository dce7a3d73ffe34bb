/**
 * The backup file (`npm run backup`): one gzip'd tar whose first entry is `backup-manifest.json` and whose every
 * other entry lies under `data/`, the data directory as it was (the manifest says what was in it). A restore reads
 * the manifest first and refuses a format it does not know.
 */
import { z } from 'zod';
import type { TreeEntry } from './file-tree.ts';

export const MANIFEST_NAME = 'backup-manifest.json';
/** The folder of the archive that holds the data directory. */
export const DATA_PREFIX = 'data';
export const BACKUP_FORMAT = 'service-data-dir-backup';
/** Raised when a restore of today's code could no longer read a backup written by it. */
export const BACKUP_FORMAT_VERSION = 1;
/** A manifest is small; anything larger at the start of a file is not one. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;

export const BackupPartSchema = z.object({
  /** A name at the data directory's top: `pglite`, `chdb`, `bus`, `artifacts`, `mail`, or whatever else was there. */
  name: z.string().min(1),
  /** Regular files and links in it. */
  files: z.number().int().nonnegative(),
  /** Bytes of its regular files. */
  bytes: z.number().int().nonnegative(),
  /** How it was copied. */
  how: z.string(),
});
export type BackupPart = z.infer<typeof BackupPartSchema>;

export const BackupManifestSchema = z.object({
  format: z.literal(BACKUP_FORMAT),
  formatVersion: z.literal(BACKUP_FORMAT_VERSION),
  /** ISO time the copy was taken. */
  createdAt: z.string(),
  /** The service that owned the data: package.json's version and the git commit, when known. */
  service: z.object({ version: z.string().optional(), commit: z.string().optional() }),
  source: z.object({
    dataDir: z.string(),
    host: z.string(),
    /** true: copied by the running service (snapshot.ts); false: the files of a stopped one. */
    serviceRunning: z.boolean(),
    /** Who held the data directory, when the service was running. */
    holder: z.string().optional(),
  }),
  parts: z.array(BackupPartSchema),
});
export type BackupManifest = z.infer<typeof BackupManifestSchema>;

/** Files and bytes per part (the top name of each path), in name order. */
export function countParts(entries: TreeEntry[]): Map<string, { files: number; bytes: number }> {
  const out = new Map<string, { files: number; bytes: number }>();
  for (const e of entries) {
    const name = e.rel.split('/')[0]!;
    let part = out.get(name);
    if (!part) out.set(name, (part = { files: 0, bytes: 0 }));
    if (e.kind !== 'dir') part.files++;
    part.bytes += e.size;
  }
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
