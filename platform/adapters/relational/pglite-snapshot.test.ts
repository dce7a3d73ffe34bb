import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgliteWorkerStore } from './pglite-worker-store.ts';

/**
 * PGlite's files copied for a backup while it serves (pglite-worker.ts, op `snapshot`): between statements, after a
 * checkpoint. A transaction open when the copy is asked for ends first, so the copy holds it whole; statements sent
 * meanwhile run after; the copy opens as a database of its own.
 */
const dirs: string[] = [];
const tempDir = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), 'pglite-snapshot-'));
  dirs.push(d);
  return d;
};
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe("PGlite's copy for a backup", () => {
  it('waits for an open transaction, holds it whole, and opens on its own while the original keeps serving', async () => {
    const dir = path.join(await tempDir(), 'pglite');
    const db = await createPgliteWorkerStore(dir);
    await db.query('CREATE TABLE events (id int PRIMARY KEY, batch text NOT NULL)');
    await db.query("INSERT INTO events SELECT g, 'before' FROM generate_series(1, 500) g");

    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const opened = new Promise<void>((r) => (inside = r));
    const tx = db.transaction(async (t) => {
      await t.query("INSERT INTO events SELECT g, 'in the open transaction' FROM generate_series(501, 600) g");
      inside();
      await held;
    });
    await opened;
    const copyDir = path.join(await tempDir(), 'pglite');
    const copying = db.snapshot!(copyDir).then(() => order.push('copied'));
    release();
    await tx.then(() => order.push('committed'));
    await copying;
    expect(order).toEqual(['committed', 'copied']);
    await db.query("INSERT INTO events VALUES (601, 'after')");

    const copy = await createPgliteWorkerStore(copyDir);
    const rows = await copy.query<{ batch: string; n: number }>('SELECT batch, count(*)::int AS n FROM events GROUP BY batch ORDER BY batch');
    expect(rows.rows).toEqual([
      { batch: 'before', n: 500 },
      { batch: 'in the open transaction', n: 100 },
    ]);
    await copy.close();
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events')).rows[0]!.n).toBe(601);
    await db.close();
  });
});
