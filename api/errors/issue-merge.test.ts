import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startErrorConsumer } from '../../processor/errors/error-consumer.ts';
import type { Subscription } from '../../platform/ports/bus.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { MERGE_GROUPS_MAX } from '../../schemas/api/errors.ts';

/** Merge issues (issue 41), through HTTP over the real pipeline: Sentry's merge, its redirects and its bounds. */
describe('merge issues', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let sub: Subscription;
  let cookie: string;

  beforeAll(async () => {
    t = await buildTestApi();
    sub = await startErrorConsumer(t.platform);
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await sub?.stop();
    await t?.close();
  });

  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: sessionHeaders(cookie) });
  const post = (url: string, payload: object = {}) => t.app.inject({ method: 'POST', url, headers: sessionHeaders(cookie), payload });
  const list = async (slug: string, status = 'unresolved') =>
    (await get(`/v1/projects/${slug}/errors?status=${status}&limit=100`)).json().data as Array<Record<string, any>>;
  const idOf = async (slug: string, name: string) => (await list(slug)).find((i) => i.name === name)!.groupId as string;
  const newProject = () => createProject(t.app, cookie, { environmentHosts: { production: ['app.example.com'] } });

  it('the target takes the others: counts, environments, first/last seen, later events of their fingerprints; they leave the list and GET of their id answers it', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event({ name: 'MergeA' }), event({ name: 'MergeA' })], { receivedAt: Date.UTC(2026, 10, 21, 12, 0, 0) }));
    await publish(batch(p.id, [event({ name: 'MergeB' })], { receivedAt: Date.UTC(2026, 10, 20, 12, 0, 0) }));
    await publish(batch(p.id, [event({ name: 'MergeC' })], { originHost: null, receivedAt: Date.UTC(2026, 10, 22, 12, 0, 0) }));
    const [a, b, c] = [await idOf(p.slug, 'MergeA'), await idOf(p.slug, 'MergeB'), await idOf(p.slug, 'MergeC')];
    const before = (await get(`/v1/projects/${p.slug}/errors/${b}`)).json().issue;

    const merged = await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [b, c, b] });
    expect(merged.statusCode, merged.body).toBe(200);
    const issue = merged.json().issue;
    expect(issue).toMatchObject({ groupId: a, name: 'MergeA', count: 4, status: 'unresolved' });
    expect(Object.values(issue.envCounts as Record<string, number>).reduce((x, y) => x + y, 0)).toBe(4);
    expect(issue.envCounts.production).toBeGreaterThanOrEqual(3);
    expect(issue.firstSeen).toBe('2026-11-20T12:00:00.000Z');
    expect(issue.lastSeen).toBe('2026-11-22T12:00:00.000Z');
    expect(issue.mergedFrom.map((m: { groupId: string }) => m.groupId).sort()).toEqual([b, c].sort());
    expect(issue.mergedFrom.find((m: { groupId: string }) => m.groupId === b).fingerprint).toBe(before.fingerprint);
    // The target keeps its own fingerprint.
    expect(issue.fingerprint).not.toBe(before.fingerprint);

    // The merged issues leave the list; GET of a merged id answers the target, saying so.
    expect((await list(p.slug)).map((i) => i.groupId)).toEqual([a]);
    const redirected = await get(`/v1/projects/${p.slug}/errors/${b}`);
    expect(redirected.statusCode).toBe(200);
    expect(redirected.json().issue).toMatchObject({ groupId: a, redirectedFrom: b });
    expect((await get(`/v1/projects/${p.slug}/errors/${a}`)).json().issue.redirectedFrom).toBeUndefined();

    // A later event of a merged fingerprint lands in the target.
    await publish(batch(p.id, [event({ name: 'MergeB' })], { receivedAt: Date.UTC(2026, 10, 23, 12, 0, 0) }));
    expect((await list(p.slug)).map((i) => [i.groupId, i.count])).toEqual([[a, 5]]);
    expect((await get(`/v1/projects/${p.slug}/errors/${a}`)).json().issue.lastSeen).toBe('2026-11-23T12:00:00.000Z');

    // Its tag facets count every occurrence, those stored under the merged ids included; a merged id's tags are the target's.
    const tags = (await get(`/v1/projects/${p.slug}/errors/${a}/tags`)).json();
    expect(tags.total).toBe(5);
    expect((await get(`/v1/projects/${p.slug}/errors/${b}/tags`)).json().total).toBe(5);
    // The tag filter of the list finds the target through the merged ids' occurrences too.
    const byTag = (await get(`/v1/projects/${p.slug}/errors?query=${encodeURIComponent('runtime:browser')}`)).json().data;
    expect(byTag.map((i: { groupId: string }) => i.groupId)).toEqual([a]);
  });

  it('merging a target moves what it merged (no chains); later events of every fingerprint land in the last target', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event({ name: 'ChainA' }), event({ name: 'ChainB' }), event({ name: 'ChainC' })]));
    const [a, b, c] = [await idOf(p.slug, 'ChainA'), await idOf(p.slug, 'ChainB'), await idOf(p.slug, 'ChainC')];
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [b] })).statusCode).toBe(200);
    const res = await post(`/v1/projects/${p.slug}/errors/${c}/merge`, { groupIds: [a] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().issue).toMatchObject({ groupId: c, count: 3 });
    expect(
      res
        .json()
        .issue.mergedFrom.map((m: { groupId: string }) => m.groupId)
        .sort(),
    ).toEqual([a, b].sort());
    expect((await get(`/v1/projects/${p.slug}/errors/${b}`)).json().issue).toMatchObject({ groupId: c, redirectedFrom: b });
    await publish(batch(p.id, [event({ name: 'ChainA' }), event({ name: 'ChainB' })]));
    expect((await list(p.slug)).map((i) => [i.groupId, i.count])).toEqual([[c, 5]]);
    // A merged id is no longer an issue to merge or merge into.
    expect((await post(`/v1/projects/${p.slug}/errors/${c}/merge`, { groupIds: [a] })).statusCode).toBe(404);
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [c] })).statusCode).toBe(404);
  });

  it('bounds: another project’s issue answers 404 and merges nothing, itself 400, 51 ids 400, none 400; errors:write only', async () => {
    const p = await newProject();
    const other = await newProject();
    await publish(batch(p.id, [event({ name: 'BoundA' }), event({ name: 'BoundB' })]));
    await publish(batch(other.id, [event({ name: 'Theirs' })]));
    const [a, b] = [await idOf(p.slug, 'BoundA'), await idOf(p.slug, 'BoundB')];
    const theirs = await idOf(other.slug, 'Theirs');

    const foreign = await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [b, theirs] });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error).toBe('not_found');
    // Nothing moved: both issues are still there, and theirs too.
    expect((await list(p.slug)).length).toBe(2);
    expect((await list(other.slug)).map((i) => i.groupId)).toEqual([theirs]);
    // Their issue as the target, through this project: 404.
    expect((await post(`/v1/projects/${p.slug}/errors/${theirs}/merge`, { groupIds: [a] })).statusCode).toBe(404);

    const self = await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [a] });
    expect(self.statusCode).toBe(400);
    expect(self.json().error).toBe('invalid_request');
    const many = Array.from({ length: MERGE_GROUPS_MAX + 1 }, (_, i) => `grp_${i}`);
    const tooMany = await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: many });
    expect(tooMany.statusCode).toBe(400);
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: [] })).statusCode).toBe(400);
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: ['x'.repeat(65)] })).statusCode).toBe(400);
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, {})).statusCode).toBe(400);
    // 50 ids of which none exist: 404, not a 5xx.
    expect((await post(`/v1/projects/${p.slug}/errors/${a}/merge`, { groupIds: many.slice(0, MERGE_GROUPS_MAX) })).statusCode).toBe(404);

    // A read-only key may not merge.
    const key = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const ro = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/errors/${a}/merge`, headers: bearer(key.token), payload: { groupIds: [b] } });
    expect(ro.statusCode).toBe(403);
    expect((await list(p.slug)).length).toBe(2);
  });

  it('bulk: resolve in next deploy moves each issue as its own route would, naming the ones it could not', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event({ name: 'BulkA' }), event({ name: 'BulkB' })]));
    const [a, b] = [await idOf(p.slug, 'BulkA'), await idOf(p.slug, 'BulkB')];
    // No live deploy: both refused as their own route refuses them.
    const refused = (await post(`/v1/projects/${p.slug}/errors/bulk`, { action: 'resolve', inNextDeploy: true, groupIds: [a] })).json();
    expect(refused).toMatchObject({ updated: [], skipped: [{ groupId: a, error: 'invalid_transition', status: 'unresolved' }] });

    const live = 'dep_bulk' + p.id.slice(-8);
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at) VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now())`,
      [live, p.id, 'c'.repeat(40)],
    );
    await t.platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.id, live]);
    const res = await post(`/v1/projects/${p.slug}/errors/bulk`, { action: 'resolve', inNextDeploy: true, groupIds: [a, b, 'grp_nosuch'] });
    expect(res.statusCode, res.body).toBe(200);
    const out = res.json();
    expect(out.updated.map((i: { groupId: string; status: string }) => [i.groupId, i.status]).sort()).toEqual([a, b].sort().map((id) => [id, 'resolving']));
    expect(out.skipped).toEqual([{ groupId: 'grp_nosuch', error: 'not_found', message: expect.any(String), status: null }]);
    expect((await list(p.slug, 'resolving')).length).toBe(2);
    // Only with resolve.
    expect((await post(`/v1/projects/${p.slug}/errors/bulk`, { action: 'ignore', inNextDeploy: true, groupIds: [a] })).statusCode).toBe(400);
    expect((await post(`/v1/projects/${p.slug}/errors/bulk`, { action: 'resolve', inNextDeploy: 'yes', groupIds: [a] })).statusCode).toBe(400);
  });
});
