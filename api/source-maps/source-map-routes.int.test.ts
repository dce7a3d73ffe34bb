import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWith } from '../../test/support/backends.ts';
import { buildTestApi, createKey, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { buildApp, builtFile, sentryCli, sentryUpload } from '../../test/support/sentry-cli.ts';
import { uploadsRepository } from './uploads-repository.ts';

/** The real sentry-cli upload against the API on the real Postgres server (chunks and maps as bytea through `pg`). */
describeWith(['postgres'], 'sentry-cli source map upload on Postgres', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let base: string;
  beforeAll(async () => {
    t = await buildTestApi({ real: { postgres: true } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  });
  afterAll(async () => t?.close());

  it('inject + upload (a map over several chunks) stores the map with its debug id; the chunks are gone after', async () => {
    expect(t.platform.db.adapter).toBe('postgres');
    const user = await signUpAndSignIn(t.app, t.platform);
    const p = await createProject(t.app, user.cookie);
    const key = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['sourcemaps:write'] });
    const app = await buildApp('pg', { padBytes: 1_200_000 });
    expect((await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root })).code).toBe(0);
    const built = await builtFile(app.dist);
    const run = await sentryUpload(base, key.token, p.slug, app.dist);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const rows = await t.platform.db.query<{ served_path: string; debug_id: string; size: number }>(
      'SELECT served_path, debug_id, size FROM source_maps WHERE project_id = $1',
      [p.id],
    );
    expect(rows.rows).toEqual([{ served_path: built.servedPath, debug_id: built.debugId, size: expect.any(Number) }]);
    expect(Number(rows.rows[0]!.size)).toBeGreaterThan(1_200_000);
    expect((await t.platform.db.query('SELECT 1 FROM source_map_chunks WHERE owner_id = $1', [p.id])).rows).toEqual([]);
    // The window-function trim and the sweep run on Postgres too.
    await uploadsRepository.putChunks(t.platform.db, p.id, [{ checksum: 'a'.repeat(40), content: Buffer.from('x') }], Date.now() - 7_200_000);
    expect(await uploadsRepository.trimChunks(t.platform.db, p.id, 0)).toBe(1);
    expect(await uploadsRepository.sweepChunks(t.platform.db, Date.now())).toBeGreaterThanOrEqual(0);
  });
});
