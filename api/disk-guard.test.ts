import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgliteStore } from '../platform/adapters/relational/pglite-store.ts';
import { startDiskSpaceWatch, type DiskSpace, type StatFs } from '../platform/data-dir/disk-space.ts';
import type { Queryable, RelationalStore } from '../platform/ports/relational-store.ts';
import { DISK_FULL_RETRY_AFTER_SEC } from '../schemas/error-codes.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../test/support/accounts.ts';

/**
 * The API on a full disk (issue 36): while DATA_DIR's disk is low it stays readable (GETs, signing in) and refuses
 * writes with 503 `unavailable` and Retry-After before a store is asked, after the request's credential and input were
 * checked; a store that does run out of space is a 503 too, never a 500, and a read whose credential's last-use note
 * cannot be written still answers. Everything is taken again once the watch finds room.
 */
const MB = 1024 * 1024;
let freeMb = 1000;
const statfs: StatFs = async () => ({ bavail: (freeMb * MB) / 4096, bsize: 4096 });

/** PGlite in memory, except that statements matching `failing` fail as Postgres does when its disk is full. */
let failing: RegExp | undefined;
const diskFullError = () => Object.assign(new Error('could not extend file "base/5/16385": No space left on device'), { code: '53100', severity: 'ERROR' });
function failingWhenFull(db: RelationalStore): RelationalStore {
  const guard =
    (q: Queryable): Queryable['query'] =>
    async (sql, params) => {
      if (failing?.test(sql)) throw diskFullError();
      return q.query(sql, params);
    };
  return { ...db, query: guard(db), transaction: (fn) => db.transaction((tx) => fn({ query: guard(tx) })) };
}

let t: Awaited<ReturnType<typeof buildTestApi>>;
let disk: DiskSpace;
let owner: SignedInUser;
beforeAll(async () => {
  disk = await startDiskSpaceWatch({ dir: '/data', minFreeBytes: 256 * MB, statfs, intervalMs: 0 });
  t = await buildTestApi({ overrides: { disk, db: failingWhenFull(await createPgliteStore()) } });
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const setFree = async (mb: number) => {
  freeMb = mb;
  await disk.check();
};

function expectDiskFull(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) {
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toBe(String(DISK_FULL_RETRY_AFTER_SEC));
  expect(res.json()).toEqual({ error: 'unavailable', message: expect.stringContaining('out of disk space') });
}

describe('the API while the disk is low', () => {
  it('answers reads and refuses writes with 503 unavailable, then takes writes again once there is room', async () => {
    const S = sessionHeaders(owner.cookie);
    const before = await createProject(t.app, owner.cookie);
    await setFree(100);
    try {
      expect(disk.low).toBe(true);
      const list = await t.app.inject({ url: '/v1/projects', headers: S });
      expect(list.statusCode).toBe(200);
      expect(JSON.stringify(list.json())).toContain(before.slug);
      expect((await t.app.inject({ url: `/v1/projects/${before.slug}`, headers: S })).statusCode).toBe(200);

      const refused = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: S, payload: { name: 'While low', slug: 'while-low-x' } });
      expectDiskFull(refused);
      expectDiskFull(await t.app.inject({ method: 'PATCH', url: `/v1/projects/${before.slug}`, headers: S, payload: { name: 'Renamed' } }));
      expectDiskFull(await t.app.inject({ method: 'POST', url: `/v1/projects/${before.slug}/keys`, headers: S, payload: { kind: 'ingest', name: 'k' } }));
      // Nothing was written.
      expect((await t.app.inject({ url: '/v1/projects/while-low-x', headers: S })).statusCode).toBe(404);

      // Checked before the disk: bad input, a missing credential, an unknown route.
      const bad = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: S, payload: { slug: 'Not A Slug!' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error).toBe('invalid_request');
      expect((await t.app.inject({ method: 'POST', url: '/v1/projects', payload: { name: 'x', slug: 'x-x' } })).statusCode).toBe(401);
      expect((await t.app.inject({ method: 'POST', url: '/v1/no-such-route', headers: S, payload: {} })).statusCode).toBe(404);

      // Signing in stays open, so people can reach the console and read.
      const again = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: owner.email, password: owner.password } });
      expect(again.statusCode).toBe(200);
    } finally {
      await setFree(1000);
    }
    expect(disk.low).toBe(false);
    const after = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: S, payload: { name: 'After', slug: `after-${before.slug}` } });
    expect(after.statusCode).toBe(201);
  });

  it('a store out of space answers 503 unavailable, not 500; a read whose last-use note cannot be written still answers', async () => {
    const fresh = await signUpAndSignIn(t.app, t.platform);
    const S = sessionHeaders(fresh.cookie);
    failing = /^\s*(INSERT INTO projects|UPDATE sessions SET last_used_at)/;
    try {
      // The session's first use notes its last use: the note fails, the read does not.
      const me = await t.app.inject({ url: '/v1/auth/me', headers: S });
      expect(me.statusCode).toBe(200);
      expectDiskFull(await t.app.inject({ method: 'POST', url: '/v1/projects', headers: S, payload: { name: 'No room', slug: `no-room-${Date.now()}` } }));
    } finally {
      failing = undefined;
    }
    const room = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: S, payload: { name: 'Room', slug: `room-${Date.now()}` } });
    expect(room.statusCode).toBe(201);
  });
});
