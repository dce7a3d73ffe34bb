import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWith } from '../../test/support/backends.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { createErrorPipeline } from '../../processor/errors/error-pipeline.ts';
import { mergesRepository } from '../../processor/errors/repositories/merges-repository.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { issueMergesRepository } from './issue-merges-repository.ts';
import { mergeLockKey } from '../../domain/issue-merges/merge-lock.ts';

/**
 * A merge committed while a batch is in flight (issue 41), on Postgres where two transactions truly overlap: the batch
 * holds its project's merge lock shared from its redirect read to its commit, so the merge waits for it and folds what
 * the batch wrote into the group it merges; without the lock the merge would delete the group under the batch, whose
 * write would then land nowhere.
 */
describeWith(['postgres'], 'merge during a batch (Postgres)', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let cookie: string;
  beforeAll(async () => {
    t = await buildTestApi({ real: { postgres: true } });
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the merge waits for the batch in flight, then takes what it wrote; the next batch reads the redirect', async () => {
    const p = await createProject(t.app, cookie);
    const db = t.platform.db;
    const pipeline = createErrorPipeline({
      db,
      analytics: t.platform.analytics,
      mailer: t.platform.mailer,
      clock: t.platform.clock,
      logger: t.platform.logger,
      publicBaseUrl: 'http://localhost',
    });
    await pipeline.handleBatch([batch(p.id, [event({ name: 'RaceA' }), event({ name: 'RaceA' }), event({ name: 'RaceB' })])]);
    const ids = Object.fromEntries(
      (await db.query<{ id: string; name: string }>('SELECT id, name FROM error_groups WHERE project_id = $1', [p.id])).rows.map((r) => [r.name, r.id]),
    );
    const [a, b] = [ids.RaceA!, ids.RaceB!];

    // A batch in flight: it has read its redirects (none yet) and will write to B before it commits.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let read!: () => void;
    const hasRead = new Promise<void>((r) => (read = r));
    const batchTx = db.transaction(async (tx) => {
      expect((await mergesRepository.redirects(tx, [p.id], [b])).size).toBe(0);
      read();
      await gate;
      await tx.query('UPDATE error_groups SET count = count + 1 WHERE id = $1', [b]);
    });
    await hasRead;
    let merged = false;
    const merge = issueMergesRepository.merge(db, p.id, a, [b], Date.now()).then((m) => {
      merged = true;
      return m;
    });
    // The merge queues on the lock the batch holds (polled, with a generous deadline).
    const deadline = Date.now() + 30_000;
    // A failure below still lets the batch commit (no transaction left open).
    const stuck = setTimeout(() => release(), 35_000);
    for (;;) {
      const waiting = await db.query<{ n: string }>(
        "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = (hashtextextended($1, 0) & 4294967295)::oid",
        [mergeLockKey(p.id)],
      );
      if (Number(waiting.rows[0]!.n) > 0) break;
      if (Date.now() > deadline) throw new Error('the merge never waited for the batch');
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(merged).toBe(false);
    clearTimeout(stuck);
    release();
    await batchTx;
    expect((await merge).map((m) => m.groupId)).toEqual([b]);

    // A counts its two, B's one and the one the batch in flight added to B.
    const rows = await db.query<{ id: string; count: string }>('SELECT id, count FROM error_groups WHERE project_id = $1', [p.id]);
    expect(rows.rows.map((r) => [r.id, Number(r.count)])).toEqual([[a, 4]]);
    // The next batch reads the redirect: B's event lands in A.
    await db.transaction(async (tx) => expect([...(await mergesRepository.redirects(tx, [p.id], [b]))]).toEqual([[b, a]]));
    await pipeline.handleBatch([batch(p.id, [event({ name: 'RaceB' })])]);
    const after = await db.query<{ id: string; count: string }>('SELECT id, count FROM error_groups WHERE project_id = $1', [p.id]);
    expect(after.rows.map((r) => [r.id, Number(r.count)])).toEqual([[a, 5]]);
  });
});
