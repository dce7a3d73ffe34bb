import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { IssueEventDataSchema } from '../../schemas/project-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { verifyWebhook } from '../../sdk/node/webhook-verifier.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { processed } from '../../test/support/platform.ts';
import { resolveOnDeploy } from '../../domain/issue-events/resolve-on-deploy.ts';

/**
 * Resolve in next deploy, completed (issue 41): a production deploy created after the mark going live resolves the
 * issue for real (status resolved, resolved_deploy_id) and issue.resolved goes out signed, naming that deploy; a rollback
 * to the marked deploy or an older one, and a preview deploy, resolve nothing; events of the marked deploy still do
 * not reopen it, events of the newer one do.
 */
describe('resolve in next deploy, completed', () => {
  let receiver: HttpsReceiver;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    t = await buildTestApi({ processors: true, overrides: { outbound: outbound.guard } });
    owner = await signUpAndSignIn(t.app, t.platform);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const session = () => sessionHeaders(owner.cookie);
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: session() });
  const post = (url: string, payload: object = {}) => t.app.inject({ method: 'POST', url, headers: session(), payload });
  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const errorIn = (projectId: string, deployId: string) => publish(batch(projectId, [event({ name: 'NextDeployBug', deployId })], { originHost: null }));
  const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);
  const resolvedEvents = (path: string) => requestsTo(path).filter((r) => JSON.parse(r.body).event === 'issue.resolved');
  /** A ready deploy created `minutesAgo` minutes ago with its output kept (a rollback can make it live). */
  const deploy = async (projectId: string, minutesAgo: number, environment: 'production' | 'preview' = 'production', live = false) => {
    const id = newId('dep_');
    const sha = randomBytes(20).toString('hex');
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at, artifact_dir)
       VALUES ($1, $2, 'main', $3, $4, 'ready', 'hook', now() - make_interval(mins => $5), now() - make_interval(mins => $5), now() - make_interval(mins => $5), $6)`,
      [id, projectId, sha, environment, minutesAgo, `artifacts/${id}`],
    );
    if (live) await t.platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, id]);
    return { id, sha };
  };
  const rollback = (slug: string, deployId: string) => post(`/v1/projects/${slug}/deploys/${deployId}/rollback`);
  const issueOf = async (slug: string, groupId: string) => (await get(`/v1/projects/${slug}/errors/${groupId}`)).json().issue;
  const listed = async (slug: string, status: string) =>
    (await get(`/v1/projects/${slug}/errors?status=${status}`)).json().data.map((i: { groupId: string }) => i.groupId) as string[];

  it('a newer production deploy going live resolves it and sends issue.resolved naming it; a rollback or a preview does not', async () => {
    const p = await createProject(t.app, owner.cookie);
    const path = `/${p.slug}`;
    const ep = await post(`/v1/projects/${p.slug}/webhooks`, { url: receiver.url.replace(/\/hook$/, path), events: ['issue.resolved'] });
    expect(ep.statusCode, ep.body).toBe(201);
    const secret = ep.json().endpoint.secret as string;

    const older = await deploy(p.id, 60);
    const marked = await deploy(p.id, 30, 'production', true);
    await errorIn(p.id, marked.id);
    const groupId = (await listed(p.slug, 'unresolved'))[0]!;
    expect((await post(`/v1/projects/${p.slug}/errors/${groupId}/resolve`, { inNextDeploy: true })).json().issue.status).toBe('resolving');

    // A rollback to an older deploy, then back to the marked one: nothing resolves.
    expect((await rollback(p.slug, older.id)).statusCode).toBe(200);
    expect((await rollback(p.slug, marked.id)).statusCode).toBe(200);
    // A preview created after the mark cannot be made live, and resolves nothing when named.
    const preview = await deploy(p.id, 20, 'preview');
    expect((await rollback(p.slug, preview.id)).statusCode).toBe(409);
    expect(await resolveOnDeploy(t.platform, 'http://console.test', p.id, preview.id)).toEqual([]);
    expect(await issueOf(p.slug, groupId)).toMatchObject({ status: 'resolving', resolveInNextDeploy: { markedAt: { id: marked.id }, resolvedBy: null } });
    expect(await listed(p.slug, 'resolving')).toEqual([groupId]);

    // A production deploy created after the mark goes live: resolved by it, for real.
    const next = await deploy(p.id, 10);
    expect((await rollback(p.slug, next.id)).statusCode).toBe(200);
    const issue = await issueOf(p.slug, groupId);
    expect(issue).toMatchObject({
      status: 'resolved',
      regressionCount: 0,
      resolveInNextDeploy: { markedAt: { id: marked.id }, resolvedBy: { id: next.id, gitSha: next.sha } },
    });
    expect(await listed(p.slug, 'resolved')).toEqual([groupId]);
    expect(await listed(p.slug, 'resolving')).toEqual([]);
    const [row] = (
      await t.platform.db.query<{ status: string; resolved_deploy_id: string }>('SELECT status, resolved_deploy_id FROM error_groups WHERE id = $1', [groupId])
    ).rows;
    expect(row).toEqual({ status: 'resolved', resolved_deploy_id: next.id });

    await expect.poll(() => resolvedEvents(path).length, { timeout: 15_000 }).toBe(1);
    const delivery = resolvedEvents(path)[0]!;
    const data = IssueEventDataSchema.parse(verifyWebhook(delivery.body, delivery.headers['service-signature'] as string, secret).data);
    expect(data).toMatchObject({ issue: { id: groupId, status: 'resolved' }, deploy: { id: next.id, gitSha: next.sha, branch: 'main' } });

    // Going live again (a rollback away and back) resolves nothing more and sends nothing twice.
    expect((await rollback(p.slug, marked.id)).statusCode).toBe(200);
    expect((await rollback(p.slug, next.id)).statusCode).toBe(200);
    expect(await resolveOnDeploy(t.platform, 'http://console.test', p.id, next.id)).toEqual([]);

    // Events of the marked deploy do not reopen it (as while it was resolving); events of the deploy that resolved it do.
    await errorIn(p.id, marked.id);
    expect(await issueOf(p.slug, groupId)).toMatchObject({ status: 'resolved', regressionCount: 0 });
    await errorIn(p.id, next.id);
    expect(await issueOf(p.slug, groupId)).toMatchObject({
      status: 'unresolved',
      regressionCount: 1,
      regressedDeploy: { id: next.id },
      resolveInNextDeploy: null,
    });
    expect(resolvedEvents(path)).toHaveLength(1);
  });

  it('a manual resolve after a deploy-resolved issue reopened reopens on any event again', async () => {
    const p = await createProject(t.app, owner.cookie);
    const marked = await deploy(p.id, 30, 'production', true);
    await errorIn(p.id, marked.id);
    const groupId = (await listed(p.slug, 'unresolved'))[0]!;
    await post(`/v1/projects/${p.slug}/errors/${groupId}/resolve`, { inNextDeploy: true });
    const next = await deploy(p.id, 10);
    await rollback(p.slug, next.id);
    expect((await issueOf(p.slug, groupId)).status).toBe('resolved');
    expect((await post(`/v1/projects/${p.slug}/errors/${groupId}/reopen`)).statusCode).toBe(200);
    expect((await post(`/v1/projects/${p.slug}/errors/${groupId}/resolve`)).statusCode).toBe(200);
    expect((await issueOf(p.slug, groupId)).resolveInNextDeploy).toBeNull();
    // Plainly resolved now: an event of the old deploy reopens it.
    await errorIn(p.id, marked.id);
    expect(await issueOf(p.slug, groupId)).toMatchObject({ status: 'unresolved', regressionCount: 1 });
  });
});
