import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { AnalyticalStore } from '../../ports/analytical-store.ts';
import { migrateAnalytical } from '../../migrate.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';
import { sharedChdbStore } from '../../../test/support/platform.ts';
import { chdbDataDir, createChdbStore } from './chdb-store.ts';
import { createClickhouseStore } from './clickhouse-store.ts';

/**
 * The analytical port's contract, run against chDB in-process and against @clickhouse/client over
 * HTTP (a configured ClickHouse, or the ClickHouse HTTP interface served from chDB in tests).
 * Every test works in tables of its own (fresh names), so test files sharing one engine never meet.
 */
const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations', 'analytical');

function contract(open: () => Promise<AnalyticalStore>) {
  let store: AnalyticalStore;
  const created: string[] = [];
  const fresh = (stem: string) => {
    const name = `ct_${stem}_${randomBytes(5).toString('hex')}`;
    created.push(name);
    return name;
  };

  beforeAll(async () => {
    store = await open();
  });
  afterAll(async () => {
    // Only the tables this suite created, never shared ones.
    for (const t of created) await store.command(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
    await store.close();
  });

  it('runs DDL, and IF NOT EXISTS makes it repeatable', async () => {
    const t = fresh('ddl');
    const ddl = `CREATE TABLE IF NOT EXISTS ${t} (id String, at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY id`;
    await store.command(ddl);
    await store.command(ddl);
    const rows = await store.query<{ name: string }>('SELECT name FROM system.tables WHERE database = currentDatabase() AND name = {t:String}', { t });
    expect(rows).toEqual([{ name: t }]);
  });

  it('inserts rows and reads them back as JSON, 64-bit integers as numbers', async () => {
    const t = fresh('rows');
    await store.command(
      `CREATE TABLE ${t} (id String, n UInt64, delta Int64, tags Array(String), at DateTime64(3, 'UTC'), note Nullable(String)) ENGINE = MergeTree ORDER BY id`,
    );
    await store.insert(t, [
      { id: 'a', n: 12_345_678_901, delta: -5, tags: ['x', "it's"], at: '2024-03-01 10:00:00.250', note: null },
      { id: 'b', n: 1, delta: 0, tags: [], at: new Date('2024-03-01T10:00:01.500Z'), note: 'back\\slash\ttab' },
    ]);
    const rows = await store.query(`SELECT id, n, delta, tags, at, note FROM ${t} ORDER BY id`);
    expect(rows).toEqual([
      { id: 'a', n: 12_345_678_901, delta: -5, tags: ['x', "it's"], at: '2024-03-01 10:00:00.250', note: null },
      { id: 'b', n: 1, delta: 0, tags: [], at: '2024-03-01 10:00:01.500', note: 'back\\slash\ttab' },
    ]);
    const [agg] = await store.query<{ c: number; s: number }>(`SELECT count() AS c, sum(n) AS s FROM ${t}`);
    expect(agg).toEqual({ c: 2, s: 12_345_678_902 });
  });

  it('inserts rows whose keys differ (missing, undefined, another order) with each column where its key says', async () => {
    const t = fresh('keys');
    await store.command(`CREATE TABLE ${t} (id String, a String DEFAULT 'dflt', b UInt32) ENGINE = MergeTree ORDER BY id`);
    // Same keys in the same order (the compact form), then a set that forces the keyed form.
    await store.insert(t, [
      { id: '1', a: 'x', b: 1 },
      { id: '2', a: undefined, b: 2 },
    ]);
    await store.insert(t, [
      { id: '3', b: 3, a: 'y' },
      { b: 4, id: '4' },
      { id: '5', a: 'z', b: 5 },
    ]);
    const rows = await store.query(`SELECT id, a, b FROM ${t} ORDER BY id`);
    expect(rows).toEqual([
      { id: '1', a: 'x', b: 1 },
      { id: '2', a: 'dflt', b: 2 },
      { id: '3', a: 'y', b: 3 },
      { id: '4', a: 'dflt', b: 4 },
      { id: '5', a: 'z', b: 5 },
    ]);
  });

  it('binds query parameters: String, DateTime64, Date objects and arrays', async () => {
    const t = fresh('params');
    await store.command(`CREATE TABLE ${t} (id String, project String, at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY (project, at)`);
    await store.insert(t, [
      { id: 'e1', project: "prj_o'brien\\x", at: '2024-05-01 00:00:00.000' },
      { id: 'e2', project: "prj_o'brien\\x", at: '2024-05-01 00:00:00.999' },
      { id: 'e3', project: "prj_o'brien\\x", at: '2024-05-02 00:00:00.000' },
      { id: 'e4', project: 'prj_other', at: '2024-05-01 00:00:00.500' },
    ]);
    const byString = await store.query<{ id: string }>(
      `SELECT id FROM ${t} WHERE project = {project:String} AND at >= {from:DateTime64(3)} AND at < {to:DateTime64(3)} ORDER BY id`,
      { project: "prj_o'brien\\x", from: '2024-05-01 00:00:00.500', to: '2024-05-02 00:00:00.000' },
    );
    expect(byString.map((r) => r.id)).toEqual(['e2']);
    const byDate = await store.query<{ id: string }>(`SELECT id FROM ${t} WHERE at >= {from:DateTime64(3)} ORDER BY id`, {
      from: new Date('2024-05-01T00:00:00.500Z'),
    });
    expect(byDate.map((r) => r.id)).toEqual(['e2', 'e3', 'e4']);
    const byArray = await store.query<{ id: string }>(`SELECT id FROM ${t} WHERE id IN {ids:Array(String)} ORDER BY id`, { ids: ['e1', 'e4', 'nope'] });
    expect(byArray.map((r) => r.id)).toEqual(['e1', 'e4']);
    // Values are bound by the engine, not spliced into the text: an injection attempt is just a string.
    const [echo] = await store.query<{ s: string }>('SELECT {s:String} AS s', { s: "x' OR 1=1 --\n\t\\" });
    expect(echo.s).toBe("x' OR 1=1 --\n\t\\");
    // Parameters also reach commands.
    await store.command(`INSERT INTO ${t} SELECT {id:String}, {p:String}, {at:DateTime64(3)}`, { id: 'e5', p: 'prj_cmd', at: '2024-06-01 12:00:00.123' });
    expect(await store.query(`SELECT id, at FROM ${t} WHERE project = {p:String}`, { p: 'prj_cmd' })).toEqual([{ id: 'e5', at: '2024-06-01 12:00:00.123' }]);
  });

  it('collapses a re-inserted event in ReplacingMergeTree (SELECT ... FINAL), keeping the newest version', async () => {
    const t = fresh('replacing');
    await store.command(`CREATE TABLE ${t} (event_id String, v UInt32, payload String) ENGINE = ReplacingMergeTree(v) ORDER BY event_id`);
    await store.insert(t, [
      { event_id: 'evt_1', v: 1, payload: 'first' },
      { event_id: 'evt_2', v: 1, payload: 'other' },
    ]);
    await store.insert(t, [{ event_id: 'evt_1', v: 2, payload: 'redelivered' }]);
    const rows = await store.query(`SELECT event_id, v, payload FROM ${t} FINAL ORDER BY event_id`);
    expect(rows).toEqual([
      { event_id: 'evt_1', v: 2, payload: 'redelivered' },
      { event_id: 'evt_2', v: 1, payload: 'other' },
    ]);
  });

  it('makes a retried insert with the same dedup token a no-op, and a new token a new block', async () => {
    const t = fresh('dedup');
    await store.command(
      `CREATE TABLE ${t} (event_id String, n UInt32) ENGINE = MergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 100`,
    );
    const block = [
      { event_id: 'evt_a', n: 1 },
      { event_id: 'evt_b', n: 2 },
    ];
    await store.insert(t, block, { dedupToken: 'batch-7:0' });
    await store.insert(t, block, { dedupToken: 'batch-7:0' });
    expect(await store.query(`SELECT count() AS c FROM ${t}`)).toEqual([{ c: 2 }]);
    await store.insert(t, block, { dedupToken: 'batch-8:0' });
    expect(await store.query(`SELECT count() AS c FROM ${t}`)).toEqual([{ c: 4 }]);
  });

  it('rejects bad SQL and unknown tables with the engine error, not retryable, and keeps working afterwards', async () => {
    const notRetryable = (type: string) => ({ name: 'AnalyticalQueryError', type, retryable: false });
    await expect(store.query('SELEC 1')).rejects.toMatchObject(notRetryable('SYNTAX_ERROR'));
    await expect(store.command('CREAT TABLE nope (a UInt8) ENGINE = Memory')).rejects.toMatchObject(notRetryable('SYNTAX_ERROR'));
    await expect(store.query(`SELECT * FROM ct_missing_${randomBytes(4).toString('hex')}`)).rejects.toMatchObject(notRetryable('UNKNOWN_TABLE'));
    await expect(store.insert(`ct_missing_${randomBytes(4).toString('hex')}`, [{ a: 1 }])).rejects.toMatchObject(notRetryable('UNKNOWN_TABLE'));
    await expect(store.query('SELECT {x:UInt8} AS x')).rejects.toMatchObject(notRetryable('UNKNOWN_QUERY_PARAMETER'));
    await expect(store.query('SELECT 1')).resolves.toEqual([{ '1': 1 }]);
    expect(await store.query('SELECT 1 AS ok')).toEqual([{ ok: 1 }]);
  });

  it('answers concurrent calls independently', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => store.query<{ v: string }>('SELECT {v:String} AS v', { v: `value-${i}` })));
    expect(results.map((r) => r[0].v)).toEqual(Array.from({ length: 8 }, (_, i) => `value-${i}`));
  });

  it('applies analytical migrations, and a second run applies nothing', async () => {
    const versions = (await readdir(migrationsDir))
      .filter((n) => /^\d{4}_.+\.sql$/.test(n))
      .map((n) => n.replace(/\.sql$/, ''))
      .sort();
    // Other test files may have migrated this engine already; either way every version is recorded once.
    await migrateAnalytical(store);
    expect(await migrateAnalytical(store)).toEqual([]);
    const recorded = await store.query<{ version: string }>('SELECT version FROM schema_migrations FINAL ORDER BY version');
    expect(recorded.map((r) => r.version)).toEqual(expect.arrayContaining(versions));
    expect(new Set(recorded.map((r) => r.version)).size).toBe(recorded.length);
    if (versions.length) {
      const tables = await store.query<{ name: string }>('SELECT name FROM system.tables WHERE database = currentDatabase()');
      expect(tables.map((r) => r.name)).toContain('schema_migrations');
    }
  });
}

describe('analytical store: chDB in-process', () => {
  contract(sharedChdbStore);

  it('shares the process-wide session for the same directory and refuses a second directory', async () => {
    await sharedChdbStore();
    const dir = chdbDataDir();
    expect(dir).toBeDefined();
    const again = await createChdbStore(dir!);
    expect(await again.query('SELECT 2 AS two')).toEqual([{ two: 2 }]);
    // Closing one holder leaves the session open for the others.
    await again.close();
    const shared = await sharedChdbStore();
    expect(await shared.query('SELECT 3 AS three')).toEqual([{ three: 3 }]);
    const other = await mkdtemp(path.join(os.tmpdir(), 'chdb-other-'));
    try {
      await expect(createChdbStore(other)).rejects.toThrow(/one data directory per process/);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

describeWith(['clickhouse'], 'analytical store: ClickHouse over HTTP (@clickhouse/client)', () => {
  contract(() => createClickhouseStore(backendUrl('clickhouse')!));

  it('fails at creation, naming the host, when nothing answers', async () => {
    await expect(createClickhouseStore('http://127.0.0.1:9/')).rejects.toMatchObject({
      type: 'CONNECTION_FAILED',
      retryable: true,
      message: expect.stringContaining('127.0.0.1:9'),
    });
  });
});
