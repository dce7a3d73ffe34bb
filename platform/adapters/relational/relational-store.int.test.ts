import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RelationalStore } from '../../ports/relational-store.ts';
import { migrateRelational, splitStatements } from '../../migrate.ts';
import { backendUrl, describeWith } from '../../../test/support/backends.ts';
import { createPgliteStore } from './pglite-store.ts';
import { createPgliteWorkerStore } from './pglite-worker-store.ts';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { createPgStore } from './pg-store.ts';

/**
 * The relational port's contract, run against PGlite (in memory) and the real Postgres server.
 * On the shared Postgres database every test works in tables or schemas of its own (fresh names);
 * nothing shared is truncated or dropped, and the helper that drops refuses any database whose name
 * lacks "test".
 */
const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'migrations', 'relational');
const migrationVersions = async () =>
  (await readdir(migrationsDir))
    .filter((n) => /^\d{4}_.+\.sql$/.test(n))
    .map((n) => n.replace(/\.sql$/, ''))
    .sort();

/** Every migration applies on the first run, none on the second, and all are recorded; closes `db`. */
async function expectMigrationsAppliedOnce(db: RelationalStore): Promise<void> {
  try {
    const versions = await migrationVersions();
    expect(await migrateRelational(db)).toEqual(versions);
    expect(await migrateRelational(db)).toEqual([]);
    const recorded = await db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
    expect(recorded.rows.map((r) => r.version)).toEqual(versions);
  } finally {
    await db.close();
  }
}

const freshName = (stem: string) => `ct_${stem}_${randomBytes(5).toString('hex')}`;

/** Drop what a test created; refuses unless the database is a test database. */
async function dropInTestDatabase(db: RelationalStore, what: { tables?: string[]; schemas?: string[] }): Promise<void> {
  const [{ name }] = (await db.query<{ name: string }>('SELECT current_database() AS name')).rows;
  if (!name.includes('test')) throw new Error(`refusing to drop anything in database "${name}": its name lacks "test"`);
  for (const t of what.tables ?? []) await db.query(`DROP TABLE IF EXISTS ${t}`);
  for (const s of what.schemas ?? []) await db.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
}

/** A connection URL whose sessions work in `schema` (unqualified names resolve there). */
function urlInSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

function contract(open: () => Promise<RelationalStore>, cleanup: (db: RelationalStore, tables: string[]) => Promise<void>) {
  let db: RelationalStore;
  const tables: string[] = [];
  const fresh = (stem: string) => {
    const t = freshName(stem);
    tables.push(t);
    return t;
  };

  beforeAll(async () => {
    db = await open();
  });
  afterAll(async () => {
    await cleanup(db, tables);
    await db.close();
  });

  it('runs parameterised queries and reports affected rows', async () => {
    const t = fresh('params');
    await db.query(`CREATE TABLE ${t} (id text PRIMARY KEY, n integer NOT NULL, big bigint NOT NULL DEFAULT 0, at timestamptz NOT NULL DEFAULT now())`);
    const ins = await db.query<{ id: string; n: number }>(`INSERT INTO ${t} (id, n, big) VALUES ($1, $2, $3), ($4, $5, $6) RETURNING id, n`, [
      'a',
      1,
      9_007_199_254,
      "b'; DROP TABLE x; --",
      2,
      0,
    ]);
    expect(ins.rows).toEqual([
      { id: 'a', n: 1 },
      { id: "b'; DROP TABLE x; --", n: 2 },
    ]);
    expect(ins.rowCount).toBe(2);
    const sel = await db.query<{ id: string; big: number }>(`SELECT id, big FROM ${t} WHERE n >= $1 ORDER BY n`, [1]);
    expect(sel.rows).toEqual([
      { id: 'a', big: 9_007_199_254 },
      { id: "b'; DROP TABLE x; --", big: 0 },
    ]);
    expect(sel.rowCount).toBe(2);
    const upd = await db.query(`UPDATE ${t} SET n = n + 10 WHERE id = $1`, ['a']);
    expect(upd.rowCount).toBe(1);
    const none = await db.query(`UPDATE ${t} SET n = 0 WHERE id = $1`, ['missing']);
    expect(none.rowCount).toBe(0);
    const [row] = (await db.query<{ n: number; at: Date }>(`SELECT n, at FROM ${t} WHERE id = $1`, ['a'])).rows;
    expect(row.n).toBe(11);
    expect(row.at).toBeInstanceOf(Date);
  });

  it('stores and queries text[] arrays', async () => {
    const t = fresh('arrays');
    await db.query(`CREATE TABLE ${t} (id text PRIMARY KEY, tags text[] NOT NULL DEFAULT '{}')`);
    await db.query(`INSERT INTO ${t} (id, tags) VALUES ($1, $2), ($3, $4), ($5, $6)`, ['a', ['prod', "o'neil", 'with,comma'], 'b', ['preview'], 'c', []]);
    const hit = await db.query<{ id: string }>(`SELECT id FROM ${t} WHERE $1 = ANY(tags) ORDER BY id`, ['prod']);
    expect(hit.rows).toEqual([{ id: 'a' }]);
    const overlap = await db.query<{ id: string }>(`SELECT id FROM ${t} WHERE tags && $1::text[] ORDER BY id`, [['preview', 'with,comma']]);
    expect(overlap.rows.map((r) => r.id)).toEqual(['a', 'b']);
    const byIds = await db.query<{ id: string }>(`SELECT id FROM ${t} WHERE id = ANY($1::text[]) ORDER BY id`, [['c', 'a', 'zz']]);
    expect(byIds.rows.map((r) => r.id)).toEqual(['a', 'c']);
    await db.query(`UPDATE ${t} SET tags = array_append(tags, $2) WHERE id = $1`, ['c', 'new']);
    const all = await db.query<{ id: string; tags: string[] }>(`SELECT id, tags FROM ${t} ORDER BY id`);
    expect(all.rows).toEqual([
      { id: 'a', tags: ['prod', "o'neil", 'with,comma'] },
      { id: 'b', tags: ['preview'] },
      { id: 'c', tags: ['new'] },
    ]);
  });

  it('stores jsonb and returns it parsed', async () => {
    const t = fresh('jsonb');
    await db.query(`CREATE TABLE ${t} (id text PRIMARY KEY, data jsonb NOT NULL)`);
    const doc = { name: 'Déploiement ✓', nested: { list: [1, 'two', null, true], empty: {} }, quote: 'it\'s "quoted"' };
    await db.query(`INSERT INTO ${t} (id, data) VALUES ($1, $2::jsonb), ($3, $4::jsonb)`, [
      'a',
      JSON.stringify(doc),
      'b',
      JSON.stringify({ name: 'other', nested: { list: [] } }),
    ]);
    const [a] = (await db.query<{ data: typeof doc }>(`SELECT data FROM ${t} WHERE id = $1`, ['a'])).rows;
    expect(a.data).toEqual(doc);
    const byField = await db.query<{ id: string; name: string }>(`SELECT id, data->>'name' AS name FROM ${t} WHERE data @> $1::jsonb`, [
      JSON.stringify({ nested: { list: ['two'] } }),
    ]);
    expect(byField.rows).toEqual([{ id: 'a', name: 'Déploiement ✓' }]);
    await db.query(`UPDATE ${t} SET data = jsonb_set(data, '{name}', to_jsonb($2::text)) WHERE id = $1`, ['b', 'renamed']);
    expect((await db.query(`SELECT data->>'name' AS name FROM ${t} WHERE id = $1`, ['b'])).rows).toEqual([{ name: 'renamed' }]);
  });

  it('commits a transaction: its writes are visible inside it and after it, and its value is returned', async () => {
    const t = fresh('commit');
    await db.query(`CREATE TABLE ${t} (id text PRIMARY KEY, n integer NOT NULL)`);
    const out = await db.transaction(async (tx) => {
      await tx.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['a', 1]);
      await tx.query(`UPDATE ${t} SET n = n + 1 WHERE id = $1`, ['a']);
      const inside = await tx.query<{ n: number }>(`SELECT n FROM ${t} WHERE id = $1`, ['a']);
      return inside.rows[0].n;
    });
    expect(out).toBe(2);
    expect((await db.query(`SELECT id, n FROM ${t}`)).rows).toEqual([{ id: 'a', n: 2 }]);
  });

  it('rolls a transaction back when its function throws, or a statement fails, and passes the error on', async () => {
    const t = fresh('rollback');
    await db.query(`CREATE TABLE ${t} (id text PRIMARY KEY, n integer NOT NULL)`);
    await db.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['kept', 1]);
    const boom = new Error('step failed');
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['gone', 1]);
        await tx.query(`UPDATE ${t} SET n = 99 WHERE id = $1`, ['kept']);
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['also-gone', 1]);
        await tx.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['kept', 2]); // duplicate key
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect((await db.query(`SELECT id, n FROM ${t} ORDER BY id`)).rows).toEqual([{ id: 'kept', n: 1 }]);
    // The store is usable after a rollback.
    await db.transaction((tx) => tx.query(`INSERT INTO ${t} (id, n) VALUES ($1, $2)`, ['after', 3]));
    expect((await db.query(`SELECT count(*)::int AS c FROM ${t}`)).rows).toEqual([{ c: 2 }]);
  });

  it('rejects bad SQL with the Postgres error code', async () => {
    await expect(db.query('SELEC 1', [])).rejects.toMatchObject({ code: '42601' });
    await expect(db.query(`SELECT * FROM ${freshName('missing')} WHERE 1 = $1`, [1])).rejects.toMatchObject({ code: '42P01' });
    expect((await db.query('SELECT $1::int + 1 AS v', [1])).rows).toEqual([{ v: 2 }]);
  });
}

describe('relational store: PGlite (in memory)', () => {
  // In memory: discarded at close, nothing to drop.
  contract(
    () => createPgliteStore(),
    async () => undefined,
  );

  it('applies migrations once; a second run is a no-op', async () => {
    const db = await createPgliteStore();
    await expectMigrationsAppliedOnce(db);
  });

  it('the dropping helper refuses a database whose name lacks "test"', async () => {
    const db = await createPgliteStore(); // its database is "postgres"
    try {
      await db.query('CREATE TABLE keep_me (id int)');
      await expect(dropInTestDatabase(db, { tables: ['keep_me'] })).rejects.toThrow(/refusing.*lacks "test"/);
      expect((await db.query('SELECT count(*)::int AS c FROM keep_me')).rows).toEqual([{ c: 0 }]);
    } finally {
      await db.close();
    }
  });
});

describe('relational store: PGlite on its own thread, in a data dir (the embedded default)', () => {
  const dataDir = () => mkdtemp(path.join(os.tmpdir(), 'pglite-worker-'));
  contract(
    async () => createPgliteWorkerStore(await dataDir()),
    async () => undefined,
  );

  it('applies migrations once; a second run is a no-op', async () => {
    await expectMigrationsAppliedOnce(await createPgliteWorkerStore(await dataDir()));
  });

  it('runs with small shared buffers (16 MB, issue 44: a small process), on a new data dir and on a reopened one', async () => {
    const dir = await dataDir();
    for (let open = 0; open < 2; open++) {
      const db = await createPgliteWorkerStore(dir);
      try {
        expect((await db.query('SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '16MB' }]);
      } finally {
        await db.close();
      }
    }
  });

  it('keeps what was committed across a close and a reopen of the same data dir', async () => {
    const dir = await dataDir();
    const first = await createPgliteWorkerStore(dir);
    await first.query('CREATE TABLE kept (id text PRIMARY KEY)');
    await first.transaction((tx) => tx.query('INSERT INTO kept (id) VALUES ($1)', ['a']));
    await first.close();
    const second = await createPgliteWorkerStore(dir);
    try {
      expect((await second.query('SELECT id FROM kept')).rows).toEqual([{ id: 'a' }]);
    } finally {
      await second.close();
    }
  });

  it('serialises transactions and the queries issued while one is open, as one connection does', async () => {
    const db = await createPgliteWorkerStore(await dataDir());
    try {
      await db.query('CREATE TABLE c (n int NOT NULL)');
      await db.query('INSERT INTO c (n) VALUES (0)');
      const order: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const first = db.transaction(async (tx) => {
        await tx.query('UPDATE c SET n = n + 1');
        order.push('first updated');
        await held;
        order.push('first ends');
      });
      await new Promise((r) => setTimeout(r, 20));
      const second = db.transaction(async (tx) => {
        order.push('second starts');
        await tx.query('UPDATE c SET n = n * 10');
      });
      const plain = db.query<{ n: number }>('SELECT n FROM c').then((r) => {
        order.push(`plain read ${r.rows[0]!.n}`);
      });
      await new Promise((r) => setTimeout(r, 50));
      release();
      await Promise.all([first, second, plain]);
      expect(order).toEqual(['first updated', 'first ends', 'second starts', 'plain read 10']);
    } finally {
      await db.close();
    }
  });

  it('rejects every request once closed', async () => {
    const db = await createPgliteWorkerStore(await dataDir());
    await db.close();
    await expect(db.query('SELECT 1 AS one', [])).rejects.toThrow(/worker exited/);
  });
});

describeWith(['postgres'], 'relational store: Postgres', () => {
  contract(
    () => createPgStore(backendUrl('postgres')!),
    (db, tables) => dropInTestDatabase(db, { tables }),
  );

  it("tells its pool's use (GET /metrics): connections open and idle, queries waiting for one", async () => {
    const db = await createPgStore(backendUrl('postgres')!, { max: 1 });
    try {
      expect(db.poolUse!()).toEqual({ total: 1, idle: 1, waiting: 0 }); // the connection check at start
      let release!: () => void;
      let inside!: () => void;
      const started = new Promise<void>((r) => (inside = r));
      const held = db.transaction(
        () =>
          new Promise<void>((r) => {
            release = r;
            inside();
          }),
      );
      await started;
      const queued = db.query('SELECT 1');
      expect(db.poolUse!()).toEqual({ total: 1, idle: 0, waiting: 1 });
      release();
      await Promise.all([held, queued]);
      expect(db.poolUse!()).toEqual({ total: 1, idle: 1, waiting: 0 });
    } finally {
      await db.close();
    }
  });

  describe('migrations, in a fresh schema of their own', () => {
    const schemas: string[] = [];
    let admin: RelationalStore;
    beforeAll(async () => {
      admin = await createPgStore(backendUrl('postgres')!, { max: 1 });
    });
    afterAll(async () => {
      await dropInTestDatabase(admin, { schemas });
      await admin.close();
    });
    const freshSchema = async () => {
      const s = freshName('mig');
      schemas.push(s);
      await admin.query(`CREATE SCHEMA ${s}`);
      return s;
    };

    it('applies migrations once; a second run is a no-op', async () => {
      const schema = await freshSchema();
      const db = await createPgStore(urlInSchema(backendUrl('postgres')!, schema), { max: 2 });
      await expectMigrationsAppliedOnce(db);
    });

    it('error group samples and stacks are compressed with lz4 when the server has it (0006)', async () => {
      const schema = await freshSchema();
      const db = await createPgStore(urlInSchema(backendUrl('postgres')!, schema), { max: 2 });
      try {
        await migrateRelational(db);
        const lz4 = (await db.query<{ ok: boolean }>(`SELECT 'lz4' = ANY (enumvals) AS ok FROM pg_settings WHERE name = 'default_toast_compression'`)).rows[0]!
          .ok;
        const cols = await db.query<{ rel: string; attname: string; attcompression: string }>(
          `SELECT attrelid::regclass::text AS rel, attname, attcompression::text FROM pg_attribute
            WHERE (attrelid, attname) IN (($1::regclass, 'samples'), ($2::regclass, 'stack')) ORDER BY attname`,
          [`${schema}.error_group_samples`, `${schema}.error_groups`],
        );
        expect(cols.rows.map((c) => [c.attname, c.attcompression])).toEqual([
          ['samples', lz4 ? 'l' : ''],
          ['stack', lz4 ? 'l' : ''],
        ]);
        // Debian's and the official Postgres images are built with lz4; CI runs on Debian's.
        if (process.env.CI) expect(lz4).toBe(true);
      } finally {
        await db.close();
      }
    });

    it("rings kept in the group row before 0006 become the group's first slot, read back newest first", async () => {
      const schema = await freshSchema();
      const db = await createPgStore(urlInSchema(backendUrl('postgres')!, schema), { max: 1 });
      try {
        // The schema as it was before 0006, with one group holding a ring in its row.
        const before = (await migrationVersions()).filter((v) => v < '0006');
        await db.query('CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
        for (const v of before) {
          for (const stmt of splitStatements(await readFile(path.join(migrationsDir, `${v}.sql`), 'utf8'))) await db.query(stmt);
          await db.query('INSERT INTO schema_migrations (version) VALUES ($1)', [v]);
        }
        await db.query(`INSERT INTO users (id, email, password_hash) VALUES ('usr_m', 'm@example.test', 'x')`);
        await db.query(`INSERT INTO projects (id, slug, name, owner_id) VALUES ('prj_m', 'm', 'm', 'usr_m')`);
        await db.query(
          `INSERT INTO error_groups (id, project_id, fingerprint, name, message, count, first_seen, last_seen, samples)
           VALUES ('grp_old', 'prj_m', 'f1', 'E', 'm', 2, now(), now(), '[{"eventId":"b"},{"eventId":"a"}]'),
                  ('grp_empty', 'prj_m', 'f2', 'E', 'm', 0, now(), now(), '[]')`,
        );
        expect(await migrateRelational(db)).toEqual((await migrationVersions()).filter((v) => v >= '0006'));
        const rows = await db.query<{ id: string; sample_batches: number; samples: Array<{ eventId: string }> }>(
          'SELECT id, sample_batches, samples FROM error_groups_with_samples ORDER BY id',
        );
        expect(rows.rows.map((r) => [r.id, Number(r.sample_batches), r.samples.map((x) => x.eventId)])).toEqual([
          ['grp_empty', 0, []],
          ['grp_old', 1, ['b', 'a']],
        ]);
      } finally {
        await db.close();
      }
    });

    it('two processes migrating at once apply each version exactly once', async () => {
      const schema = await freshSchema();
      const url = urlInSchema(backendUrl('postgres')!, schema);
      const a = await createPgStore(url, { max: 2 });
      const b = await createPgStore(url, { max: 2 });
      try {
        const versions = await migrationVersions();
        const [ranA, ranB] = await Promise.all([migrateRelational(a), migrateRelational(b)]);
        expect([...ranA, ...ranB].sort()).toEqual(versions);
        const recorded = await a.query<{ version: string; c: number }>(
          'SELECT version, count(*)::int AS c FROM schema_migrations GROUP BY version ORDER BY version',
        );
        expect(recorded.rows).toEqual(versions.map((version) => ({ version, c: 1 })));
        expect(await migrateRelational(b)).toEqual([]);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
});
