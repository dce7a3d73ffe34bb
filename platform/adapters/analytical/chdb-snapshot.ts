import { randomBytes } from 'node:crypto';
import { readFile, readdir, realpath, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { mirrorTree, type SkipRule } from '../../data-dir/file-tree.ts';
import type { AnalyticalStore } from '../../ports/analytical-store.ts';

/**
 * chDB's files copied for a backup while it runs (platform/data-dir/snapshot.ts), in ClickHouse's own way:
 *
 *   1. everything but the tables' parts is copied as it is: databases' and tables' metadata (the `.sql` files and the
 *      links of an Atomic database), each table's `format_version.txt`, and its insert deduplication log cut to its
 *      last whole line. The log goes first, so each token in the copy belongs to a part the freeze below still sees
 *      (a token without its part would make a replayed insert be dropped as a duplicate);
 *   2. `ALTER TABLE ... FREEZE WITH NAME` per MergeTree table: ClickHouse hard-links the table's active parts (a
 *      part is immutable once written) into `shadow/<name>/`, consistent per table, while inserts and merges go on;
 *   3. the frozen parts are linked into the copy where the table keeps them, so the copy is a data directory chDB
 *      opens as it is (restore is extracting it), and the freeze is removed.
 * Across tables the copy is not one instant: the pipelines write each table idempotently (rows keyed by event id,
 * deduplication tokens), so the bus's replay after a restore completes whichever table is behind.
 * The parts' scratch (`tmp_*`, outdated parts, `detached/`) and chDB's `tmp/` and `shadow/` are left out.
 */
export async function snapshotChdb(store: Pick<AnalyticalStore, 'query' | 'command'>, chdbDir: string, dest: string): Promise<void> {
  const root = path.resolve(chdbDir);
  // chDB may name its paths through the links of the directory's path, or not.
  const roots = [root, await realpath(root)];
  const tables = await store.query<{ database: string; name: string; data_paths: string[] }>(
    "SELECT database, name, data_paths FROM system.tables WHERE engine LIKE '%MergeTree' AND database != 'system' AND NOT is_temporary",
  );
  const tableDirs = new Map<string, { database: string; name: string }>();
  for (const t of tables) {
    for (const p of t.data_paths) {
      const rel = roots.map((r) => path.relative(r, p).split(path.sep).join('/')).find((r) => r && !r.startsWith('..') && !path.isAbsolute(r));
      if (rel) tableDirs.set(rel, t);
    }
  }
  const skip: SkipRule = (rel, kind) => {
    if (rel === 'shadow' || rel === 'tmp') return true;
    const parent = path.posix.dirname(rel);
    return kind === 'dir' && tableDirs.has(parent) && path.posix.basename(rel) !== DEDUP_LOGS;
  };

  // 1. metadata and deduplication logs
  const copied = await mirrorTree(root, dest, 'copy', skip);
  for (const e of copied) {
    if (e.kind === 'file' && tableDirs.has(path.posix.dirname(path.posix.dirname(e.rel))) && path.posix.basename(path.posix.dirname(e.rel)) === DEDUP_LOGS) {
      await cutToLastLine(path.join(dest, e.rel));
    }
  }

  // 2. and 3. the parts
  const name = `backup_${Date.now()}_${randomBytes(4).toString('hex')}`;
  try {
    for (const t of new Set(tableDirs.values())) await store.command(`ALTER TABLE ${ident(t.database)}.${ident(t.name)} FREEZE WITH NAME '${name}'`);
    for (const rel of tableDirs.keys()) {
      const frozen = path.join(root, 'shadow', name, rel);
      const parts = await readdir(frozen).catch(() => [] as string[]);
      for (const part of parts) await mirrorTree(path.join(frozen, part), path.join(dest, rel, part), 'link');
    }
  } finally {
    await rm(path.join(root, 'shadow', name), { recursive: true, force: true });
  }
}

const DEDUP_LOGS = 'deduplication_logs';

/** A deduplication log copied while an insert appends to it may end in half a record: the copy keeps whole lines. */
async function cutToLastLine(file: string): Promise<void> {
  const buf = await readFile(file);
  const end = buf.lastIndexOf(0x0a) + 1;
  if (end !== buf.length) await writeFile(file, buf.subarray(0, end));
}

const ident = (s: string) => `\`${s.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
