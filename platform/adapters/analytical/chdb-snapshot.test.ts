import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createChdbStore } from './chdb-store.ts';

/**
 * chDB's files copied for a backup while inserts go on (chdb-snapshot.ts): every block inserted before the copy is
 * in it, a block inserted meanwhile is there whole or not at all, the insert deduplication tokens come along (a
 * replayed insert after a restore is dropped as a duplicate, not counted twice), and the copy opens as a chDB data
 * directory of its own. chDB binds one data directory per process, so the copy is opened by a child process.
 */
const ROOT = path.resolve(import.meta.dirname, '../../..');
let base: string;
afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

/** In a process of its own: the copy's row counts, and what re-inserting a block with an old token does. */
function inspectCopy(dir: string): { events: number; plain: number; afterReplay: number; afterNew: number } {
  const script = `
    import { Session } from 'chdb';
    const s = new Session(${JSON.stringify(dir)});
    const count = (t) => Number(s.query('SELECT count() FROM ' + t, 'CSV').trim());
    const events = count('events FINAL'), plain = count('plain');
    const block = (token, from) => s.query("INSERT INTO events SETTINGS insert_deduplication_token='" + token + "' SELECT toString(number), 1 FROM numbers(" + from + ", 10)");
    block('b0', 100000);
    const afterReplay = count('events');
    block('new-token', 200000);
    const afterNew = count('events');
    s.close();
    process.stdout.write(JSON.stringify({ events, plain, afterReplay, afterNew }));
  `;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' }));
}

describe("chDB's copy for a backup", () => {
  it('holds every block inserted before it, whole blocks of those inserted meanwhile, and the dedup tokens', { timeout: 120_000 }, async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'chdb-snapshot-'));
    const dir = path.join(base, 'chdb');
    const store = await createChdbStore(dir);
    await store.command(
      'CREATE TABLE events (id String, n UInt32) ENGINE = ReplacingMergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
    );
    await store.command('CREATE TABLE plain (id UInt64) ENGINE = MergeTree ORDER BY id');
    const block = (i: number) => Array.from({ length: 10 }, (_, j) => ({ id: `e${i}-${j}`, n: i }));
    for (let i = 0; i < 20; i++) await store.insert('events', block(i), { dedupToken: `b${i}` });
    await store.insert(
      'plain',
      Array.from({ length: 50 }, (_, i) => ({ id: i })),
    );

    const copyDir = path.join(base, 'copy');
    const meanwhile = Array.from({ length: 20 }, (_, k) => store.insert('events', block(20 + k), { dedupToken: `b${20 + k}` }));
    await Promise.all([store.snapshot!(copyDir), ...meanwhile]);

    // The freeze made for the copy is gone from the original; the copy has no scratch of its own.
    expect(readdirSync(path.join(dir, 'shadow')).filter((n) => n.startsWith('backup_'))).toEqual([]);
    expect(existsSync(path.join(copyDir, 'shadow'))).toBe(false);
    expect(Number((await store.query<{ n: number }>('SELECT count() AS n FROM events'))[0]!.n)).toBe(400);
    await store.close();

    const copy = inspectCopy(copyDir);
    expect(copy.events).toBeGreaterThanOrEqual(200);
    expect(copy.events).toBeLessThanOrEqual(400);
    expect(copy.events % 10).toBe(0);
    expect(copy.plain).toBe(50);
    // b0's token came along: the replayed block is dropped, a new one is stored.
    expect(copy.afterReplay - copy.events).toBe(0);
    expect(copy.afterNew - copy.afterReplay).toBe(10);
  });
});
