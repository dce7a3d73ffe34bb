import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startErrorConsumer } from '../../processor/errors/error-consumer.ts';
import type { Subscription } from '../../platform/ports/bus.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { newId } from '../../platform/tokens.ts';

/** Issues know their deploys, and resolve in next deploy (issue 41), through HTTP over the real pipeline. */
describe('issue deploys', () => {
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
  /** A server event (no Origin) that names its deploy, as @sentry/node's release or cx's deployId does. */
  const errorIn = (projectId: string, deployId: string) => publish(batch(projectId, [event({ name: 'DeployBug', deployId })], { originHost: null }));
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: sessionHeaders(cookie) });
  const post = (url: string, payload: object = {}) => t.app.inject({ method: 'POST', url, headers: sessionHeaders(cookie), payload });
  /** A ready production deploy created `minutesAgo` minutes ago; `live` makes it the project's live deploy. */
  let shaSeq = 0;
  const deploy = async (projectId: string, minutesAgo: number, live = false) => {
    const id = newId('dep_');
    const sha = (++shaSeq).toString(16).padStart(40, 'a');
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at)
       VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now() - make_interval(mins => $4), now() - make_interval(mins => $4), now() - make_interval(mins => $4))`,
      [id, projectId, sha, minutesAgo],
    );
    if (live) await t.platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, id]);
    return { id, sha };
  };
  const onlyIssue = async (slug: string, status = 'unresolved') => {
    const list = (await get(`/v1/projects/${slug}/errors?status=${status}`)).json();
    expect(list.data).toHaveLength(1);
    return (await get(`/v1/projects/${slug}/errors/${list.data[0].groupId}`)).json().issue;
  };

  it('an issue is first seen in one deploy, regresses in the second and is last seen in the third', async () => {
    const p = await createProject(t.app, cookie);
    const d1 = await deploy(p.id, 30);
    const d2 = await deploy(p.id, 20);
    const d3 = await deploy(p.id, 10, true);
    await errorIn(p.id, d1.id);
    let issue = await onlyIssue(p.slug);
    expect(issue.firstSeenDeploy).toMatchObject({ id: d1.id, gitSha: d1.sha });
    expect(issue.lastSeenDeploy).toMatchObject({ id: d1.id });
    expect(issue.regressedDeploy).toBeNull();
    expect((await post(`/v1/projects/${p.slug}/errors/${issue.groupId}/resolve`)).statusCode).toBe(200);
    // Named by git sha this time (the rule release health uses): still that deploy.
    await publish(batch(p.id, [event({ name: 'DeployBug', gitSha: d2.sha })], { originHost: null }));
    await errorIn(p.id, d3.id);
    issue = await onlyIssue(p.slug);
    expect(issue).toMatchObject({ regressionCount: 1, status: 'unresolved' });
    expect(issue.firstSeenDeploy.id).toBe(d1.id);
    expect(issue.regressedDeploy).toMatchObject({ id: d2.id, gitSha: d2.sha });
    expect(issue.lastSeenDeploy.id).toBe(d3.id);
    expect(typeof issue.firstSeenDeploy.createdAt).toBe('string');

    const of = async (d: { id: string }) => (await get(`/v1/projects/${p.slug}/deploys/${d.id}/issues`)).json();
    const ids = (xs: Array<{ groupId: string }>) => xs.map((x) => x.groupId);
    expect(ids((await of(d1)).introduced)).toEqual([issue.groupId]);
    expect(ids((await of(d1)).regressed)).toEqual([]);
    expect(ids((await of(d2)).regressed)).toEqual([issue.groupId]);
    expect(await of(d3)).toEqual({ introduced: [], regressed: [] });
    expect((await get(`/v1/projects/${p.slug}/deploys/dep_nosuch/issues`)).statusCode).toBe(404);
  });

  it('resolve in next deploy: events of the old deploy do not reopen it, events of the new one do', async () => {
    const p = await createProject(t.app, cookie);
    // No live deploy yet: nothing to resolve after.
    await errorIn(p.id, (await deploy(p.id, 60)).id);
    const first = await onlyIssue(p.slug);
    const refused = await post(`/v1/projects/${p.slug}/errors/${first.groupId}/resolve`, { inNextDeploy: true });
    expect(refused.statusCode).toBe(409);
    expect(refused.json().error).toBe('invalid_transition');
    expect((await post(`/v1/projects/${p.slug}/errors/${first.groupId}/resolve`, { inNextDeploy: 'yes' })).statusCode).toBe(400);

    const old = await deploy(p.id, 30, true);
    await errorIn(p.id, old.id);
    const marked = await post(`/v1/projects/${p.slug}/errors/${first.groupId}/resolve`, { inNextDeploy: true });
    expect(marked.statusCode).toBe(200);
    expect(marked.json().issue).toMatchObject({ status: 'resolving', resolveInNextDeploy: { markedAt: { id: old.id }, resolvedBy: null } });
    // Still open, and the old deploy's events keep it so, as do events that name no deploy.
    await errorIn(p.id, old.id);
    await publish(batch(p.id, [event({ name: 'DeployBug' })], { originHost: null }));
    let issue = await onlyIssue(p.slug, 'resolving');
    expect(issue).toMatchObject({ status: 'resolving', regressionCount: 0 });

    // A newer production deploy goes live: the issue reads resolved, by it; the old deploy's events still do not reopen it.
    const next = await deploy(p.id, 5, true);
    issue = await onlyIssue(p.slug, 'resolving');
    expect(issue).toMatchObject({ status: 'resolved', regressionCount: 0, resolveInNextDeploy: { markedAt: { id: old.id }, resolvedBy: { id: next.id } } });
    await errorIn(p.id, old.id);
    issue = await onlyIssue(p.slug, 'resolving');
    expect(issue).toMatchObject({ status: 'resolved', regressionCount: 0 });

    // An event of the new deploy regresses it, in that deploy.
    await errorIn(p.id, next.id);
    issue = await onlyIssue(p.slug);
    expect(issue).toMatchObject({ status: 'unresolved', regressionCount: 1, regressedDeploy: { id: next.id }, resolveInNextDeploy: null });
    expect((await get(`/v1/projects/${p.slug}/deploys/${next.id}/issues`)).json().regressed.map((x: { groupId: string }) => x.groupId)).toEqual([
      issue.groupId,
    ]);
  });
});
