import { lstat, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../platform/ports/relational-store.ts';
import { sourceMapsRepository } from '../domain/source-maps/source-maps-repository.ts';
import { DIR_BYTES } from './artifact-copy.ts';
import { outputQuotaRepository } from './output-quota-repository.ts';

/**
 * Artifacts do not pile up: per project, the outputs of ready deploys that are neither live nor among the newest
 * `keep` are deleted, and the deploy forgets its artifact (its host then answers "nothing is deployed here", and a
 * rollback to it is refused). The column is cleared first, in one statement that skips whatever is live at that
 * moment, and only then are its source maps and files removed, so a concurrent rollback never points at a deleted
 * output. Only directories under DATA_DIR/artifacts are ever deleted: the stored `artifacts/<deployId>` (relative to
 * DATA_DIR, so a moved data directory is still swept) or an absolute path under it. Any number of builders may sweep
 * at once. Outputs kept from before their size was recorded (issue 38's quotas) are measured here, a batch a sweep.
 */
export async function sweepArtifacts(db: Queryable, dataDir: string, keep: number, batch = 200): Promise<string[]> {
  const root = path.resolve(dataDir);
  const under = path.join(root, 'artifacts') + path.sep;
  const forgotten = await outputQuotaRepository.forgetOldOutputs(db, keep, under, batch);
  await removeOutputs(db, dataDir, forgotten);
  await measureKeptOutputs(db, dataDir, batch);
  return forgotten.map((o) => o.id);
}

/** The files and source maps of outputs whose deploys already forgot them (swept, or released for a new output). */
export async function removeOutputs(db: Queryable, dataDir: string, outputs: Array<{ id: string; artifactDir: string }>): Promise<void> {
  const root = path.resolve(dataDir);
  const under = path.join(root, 'artifacts') + path.sep;
  // A deploy's source maps are kept exactly as long as its output (issue 37): errors from its files stop resolving.
  await sourceMapsRepository.deleteForDeploys(
    db,
    outputs.map((o) => o.id),
  );
  for (const o of outputs) {
    const dir = path.resolve(root, o.artifactDir);
    if (dir.startsWith(under)) await rm(dir, { recursive: true, force: true });
  }
}

/** Record the apparent size of outputs kept from before sizes were (as artifact-copy.ts charges them); answers how many. */
export async function measureKeptOutputs(db: Queryable, dataDir: string, batch = 200): Promise<number> {
  const rows = await outputQuotaRepository.unmeasured(db, batch);
  for (const row of rows) await outputQuotaRepository.measured(db, row.id, await apparentSize(path.resolve(dataDir, row.artifactDir)));
  return rows.length;
}

/** Files at their length, directories at DIR_BYTES, links not followed; 0 for a directory that is gone. */
async function apparentSize(dir: string): Promise<number> {
  let total = 0;
  const pending = [dir];
  while (pending.length) {
    const d = pending.pop()!;
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        total += DIR_BYTES;
        pending.push(p);
      } else if (e.isFile()) total += (await lstat(p).catch(() => undefined))?.size ?? 0;
    }
  }
  return total;
}
