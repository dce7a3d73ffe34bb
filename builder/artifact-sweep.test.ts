import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../platform/platform.ts';
import { newId } from '../platform/tokens.ts';
import { createIngestProject } from '../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { deploysRepository } from '../api/deploys/deploys-repository.ts';
import { sweepArtifacts } from './artifact-sweep.ts';
import { DIR_BYTES } from './artifact-copy.ts';
import { sourceMapsRepository } from '../domain/source-maps/source-maps-repository.ts';

/** Row 6 of issue 22 (artifacts were never cleaned): the sweep keeps the live deploy and the newest N per project. */
let platform: Platform;
let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'sweep-data-'));
  platform = await createTestPlatform({ env: { DATA_DIR: dataDir } });
});
afterAll(async () => platform?.close());

async function readyDeploy(projectId: string, minutesAgo: number, artifactDir?: string) {
  const id = newId('dep_');
  const dir = artifactDir ?? path.join(dataDir, 'artifacts', id);
  await mkdir(dir, { recursive: true });
  await platform.db.query(
    `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, now() - make_interval(mins => $4))`,
    [id, projectId, dir, minutesAgo],
  );
  return { id, dir };
}

describe('the artifact sweep', () => {
  it('deletes outputs that are neither live nor among the newest N; a rollback to a swept deploy is refused', async () => {
    const p = await createIngestProject(platform);
    const oldest = await readyDeploy(p.projectId, 50);
    const live = await readyDeploy(p.projectId, 40);
    const older = await readyDeploy(p.projectId, 30);
    const newer = await readyDeploy(p.projectId, 20);
    const newest = await readyDeploy(p.projectId, 10);
    const foreign = await readyDeploy(p.projectId, 60, await mkdtemp(path.join(os.tmpdir(), 'not-ours-')));
    await platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.projectId, live.id]);
    const swept = await sweepArtifacts(platform.db, dataDir, 2);
    expect(swept.sort()).toEqual([oldest.id, older.id].sort());
    for (const kept of [live, newer, newest]) expect(existsSync(kept.dir)).toBe(true);
    for (const gone of [oldest, older]) expect(existsSync(gone.dir)).toBe(false);
    expect(existsSync(foreign.dir)).toBe(true); // only DATA_DIR/artifacts is ever deleted
    await expect(deploysRepository.rollbackTo(platform.db, p.projectId, older.id)).rejects.toThrow(/cleaned up/);
    await deploysRepository.rollbackTo(platform.db, p.projectId, newer.id);
    // The deploy that was live is now just the third newest: swept; the new live one stays.
    expect(await sweepArtifacts(platform.db, dataDir, 2)).toEqual([live.id]);
    expect(existsSync(newer.dir)).toBe(true);
  });

  it("forgets a swept deploy's source maps with its output; the kept deploys' maps stay", async () => {
    const p = await createIngestProject(platform);
    const old = await readyDeploy(p.projectId, 30);
    const kept = await readyDeploy(p.projectId, 10);
    const map = (name: string) => ({ mapName: `${name}.js.map`, servedPath: `/${name}.js`, content: Buffer.from('{"version":3,"mappings":""}') });
    for (const d of [old, kept]) await sourceMapsRepository.insert(platform.db, { projectId: p.projectId, deployId: d.id }, [map('a'), map('b')]);
    await platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.projectId, kept.id]);
    expect(await sweepArtifacts(platform.db, dataDir, 1)).toEqual([old.id]);
    expect(await sourceMapsRepository.listForDeploy(platform.db, old.id)).toEqual([]);
    expect((await sourceMapsRepository.listForDeploy(platform.db, kept.id)).map((m) => m.mapName)).toEqual(['a.js.map', 'b.js.map']);
  });

  it('sweeps an artifact stored relative to DATA_DIR (as builds store it since migration 0025)', async () => {
    const p = await createIngestProject(platform);
    const old = await readyDeploy(p.projectId, 30);
    const kept = await readyDeploy(p.projectId, 10);
    for (const d of [old, kept]) await platform.db.query('UPDATE deploys SET artifact_dir = $2 WHERE id = $1', [d.id, `artifacts/${d.id}`]);
    await platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.projectId, kept.id]);
    expect(await sweepArtifacts(platform.db, dataDir, 1)).toEqual([old.id]);
    expect(existsSync(old.dir)).toBe(false);
    expect(existsSync(kept.dir)).toBe(true);
  });

  it('measures outputs kept from before sizes were recorded, at apparent size (issue 38 quotas)', async () => {
    const p = await createIngestProject(platform);
    const old = await readyDeploy(p.projectId, 10);
    await platform.db.query('UPDATE deploys SET artifact_dir = $2 WHERE id = $1', [old.id, `artifacts/${old.id}`]);
    await mkdir(path.join(old.dir, 'assets'));
    await writeFile(path.join(old.dir, 'index.html'), 'hello');
    // A sparse file: 3 MB long, no blocks.
    await writeFile(path.join(old.dir, 'assets', 'sparse.bin'), '');
    await truncate(path.join(old.dir, 'assets', 'sparse.bin'), 3 * 1024 * 1024);
    await sweepArtifacts(platform.db, dataDir, 10);
    const r = await platform.db.query<{ artifact_bytes: string }>('SELECT artifact_bytes FROM deploys WHERE id = $1', [old.id]);
    expect(Number(r.rows[0].artifact_bytes)).toBe(5 + 3 * 1024 * 1024 + DIR_BYTES);
  });
});
