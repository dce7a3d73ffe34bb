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
import { DiscordMessage, SlackMessage } from '../../processor/webhooks/chat-formats.test-shapes.ts';
import { processed } from '../../test/support/platform.ts';

/**
 * Issue 41, "Notifications where teams are": issue.created / issue.regressed from the error pipeline and issue.resolved
 * from the resolve route, through the webhook fan-out, signed (standard endpoints) or as Slack and Discord messages,
 * each checked against the service's documented shape.
 */

const BASE = 'http://console.test:8080';

describe('issue.* events and chat formats', () => {
  let receiver: HttpsReceiver;
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let owner: SignedInUser;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
    // Names only ever created, never sent to (the refusal test's project fires no events); loopback all the same.
    outbound.table = { 'hooks.slack.com': ['127.0.0.1'], 'public.test': ['127.0.0.1'] };
    t = await buildTestApi({ processors: true, overrides: { outbound: outbound.guard }, env: { PUBLIC_BASE_URL: BASE } });
    owner = await signUpAndSignIn(t.app, t.platform);
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const session = () => sessionHeaders(owner.cookie);
  const requestsTo = (path: string) => receiver.requests.filter((r) => r.path === path);
  const waitFor = async (path: string, pred: (bodies: Array<Record<string, unknown>>) => boolean) => {
    await expect.poll(() => pred(requestsTo(path).map((r) => JSON.parse(r.body))), { timeout: 15_000 }).toBe(true);
  };
  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const endpoint = async (slug: string, payload: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/webhooks`, headers: session(), payload });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().endpoint as { id: string; secret: string; format: string };
  };
  const hook = (path: string) => receiver.url.replace(/\/hook$/, path);
  const newProject = () => createProject(t.app, owner.cookie, { environmentHosts: { production: ['app.example.com'] } });

  it('issue.created, issue.resolved and issue.regressed reach a standard endpoint signed, with the documented payload; a re-delivered batch sends nothing twice', async () => {
    const p = await newProject();
    const path = `/${p.slug}`;
    const ep = await endpoint(p.slug, { url: hook(path), events: ['issue.*'] });
    expect(ep.format).toBe('standard');

    const first = batch(p.id, [event({ name: 'TypeError', message: 'boom' })]);
    await publish(first);
    await waitFor(path, (b) => b.some((x) => x.event === 'issue.created'));
    // The same batch again (the bus re-delivers): its event is a duplicate and creates nothing.
    await publish(first);

    const created = requestsTo(path).find((r) => JSON.parse(r.body).event === 'issue.created')!;
    const payload = verifyWebhook<Record<string, unknown>>(created.body, created.headers['service-signature'] as string, ep.secret);
    const data = IssueEventDataSchema.parse(payload.data);
    expect(data).toMatchObject({
      issue: { title: 'TypeError: boom', status: 'unresolved', count: 1, regressionCount: 0, environmentCounts: { production: 1 } },
      environment: 'production',
      deploy: null,
      project: { id: p.id, slug: p.slug },
    });
    expect(data.issue.culprit).toContain('loadUser');
    expect(data.url).toBe(`${BASE}/projects/${p.slug}/errors/${data.issue.id}`);
    expect(created.headers['service-webhook-event']).toBe('issue.created');

    const resolved = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/errors/${data.issue.id}/resolve`, headers: session(), payload: {} });
    expect(resolved.statusCode, resolved.body).toBe(200);
    await waitFor(path, (b) => b.some((x) => x.event === 'issue.resolved'));
    const res = requestsTo(path).find((r) => JSON.parse(r.body).event === 'issue.resolved')!;
    const resolvedData = IssueEventDataSchema.parse(verifyWebhook(res.body, res.headers['service-signature'] as string, ep.secret).data);
    expect(resolvedData).toMatchObject({ issue: { id: data.issue.id, status: 'resolved' }, environment: null });

    await publish(batch(p.id, [event({ name: 'TypeError', message: 'boom' })]));
    await waitFor(path, (b) => b.some((x) => x.event === 'issue.regressed'));
    const reg = requestsTo(path).find((r) => JSON.parse(r.body).event === 'issue.regressed')!;
    const regData = IssueEventDataSchema.parse(verifyWebhook(reg.body, reg.headers['service-signature'] as string, ep.secret).data);
    expect(regData).toMatchObject({ issue: { id: data.issue.id, status: 'unresolved', count: 2, regressionCount: 1 }, environment: 'production' });

    // One issue.created in all, though the batch came twice.
    expect(requestsTo(path).filter((r) => JSON.parse(r.body).event === 'issue.created')).toHaveLength(1);
  });

  it('issue.created names the deploy the issue was first seen in, issue.regressed the one it regressed in; a Discord embed shows it', async () => {
    const p = await newProject();
    const path = `/${p.slug}-deploys`;
    const ep = await endpoint(p.slug, { url: hook(path), events: ['issue.created', 'issue.regressed'] });
    await endpoint(p.slug, { url: hook(`${path}-discord`), format: 'discord', events: ['issue.created'] });
    const deploy = async (minutesAgo: number) => {
      const id = newId('dep_');
      const sha = randomBytes(20).toString('hex');
      await t.platform.db.query(
        `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at)
         VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now() - make_interval(mins => $4), now() - make_interval(mins => $4), now() - make_interval(mins => $4))`,
        [id, p.id, sha, minutesAgo],
      );
      return { id, sha };
    };
    const d1 = await deploy(20);
    const d2 = await deploy(10);
    await publish(batch(p.id, [event({ name: 'DeployBug', deployId: d1.id })], { originHost: null }));
    await waitFor(path, (b) => b.some((x) => x.event === 'issue.created'));
    const created = requestsTo(path).find((r) => JSON.parse(r.body).event === 'issue.created')!;
    const data = IssueEventDataSchema.parse(verifyWebhook(created.body, created.headers['service-signature'] as string, ep.secret).data);
    expect(data.deploy).toEqual({ id: d1.id, gitSha: d1.sha, branch: 'main' });
    await waitFor(`${path}-discord`, (b) => b.length >= 1);
    const discord = DiscordMessage.parse(JSON.parse(requestsTo(`${path}-discord`)[0]!.body));
    expect(discord.embeds[0]!.fields).toContainEqual(expect.objectContaining({ name: 'Deploy', value: `${d1.id} (${d1.sha.slice(0, 7)})` }));

    expect(
      (await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/errors/${data.issue.id}/resolve`, headers: session(), payload: {} })).statusCode,
    ).toBe(200);
    await publish(batch(p.id, [event({ name: 'DeployBug', deployId: d2.id })], { originHost: null }));
    await waitFor(path, (b) => b.some((x) => x.event === 'issue.regressed'));
    const reg = requestsTo(path).find((r) => JSON.parse(r.body).event === 'issue.regressed')!;
    expect(IssueEventDataSchema.parse(JSON.parse(reg.body).data).deploy).toEqual({ id: d2.id, gitSha: d2.sha, branch: 'main' });
  });

  it('a Slack-format endpoint gets { text, blocks } and a Discord-format one { content, embeds }, within their limits, without our signature headers', async () => {
    const p = await newProject();
    await endpoint(p.slug, { url: hook(`/${p.slug}-slack`), format: 'slack', events: ['issue.created', 'webhook.test'] });
    await endpoint(p.slug, { url: hook(`/${p.slug}-discord`), format: 'discord', events: ['issue.created', 'webhook.test'] });

    // A long message: every piece must still be cut to its service's limit.
    await publish(batch(p.id, [event({ name: 'RangeError', message: `too deep <${'x'.repeat(9000)}> & more` })]));
    await waitFor(`/${p.slug}-slack`, (b) => b.length >= 1);
    await waitFor(`/${p.slug}-discord`, (b) => b.length >= 1);
    expect((await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/webhooks/test`, headers: session() })).statusCode).toBe(202);
    await waitFor(`/${p.slug}-slack`, (b) => b.length >= 2);
    await waitFor(`/${p.slug}-discord`, (b) => b.length >= 2);

    for (const r of [...requestsTo(`/${p.slug}-slack`), ...requestsTo(`/${p.slug}-discord`)]) {
      expect(r.headers['service-signature']).toBeUndefined();
      expect(r.headers['service-webhook-id']).toBeUndefined();
      expect(r.headers['content-type']).toBe('application/json');
    }
    const [slackIssue, slackTest] = requestsTo(`/${p.slug}-slack`).map((r) => SlackMessage.parse(JSON.parse(r.body)));
    expect(slackIssue!.text).toContain('New issue: RangeError: too deep');
    expect(JSON.stringify(slackIssue!.blocks)).toContain(`<${BASE}/projects/${p.slug}/errors/`);
    // mrkdwn's control characters are escaped
    expect(JSON.stringify(slackIssue!.blocks[0])).toContain('&lt;xxx');
    expect(slackTest!.text).toContain('webhook.test');

    const [discordIssue, discordTest] = requestsTo(`/${p.slug}-discord`).map((r) => DiscordMessage.parse(JSON.parse(r.body)));
    const embed = discordIssue!.embeds[0]!;
    expect(embed.title.length).toBe(256);
    expect(embed.url).toMatch(new RegExp(`^${BASE}/projects/${p.slug}/errors/`));
    expect(embed.fields.map((f) => f.name)).toEqual(['Project', 'Environment', 'Events', 'Culprit']);
    expect(discordIssue!.content.length).toBeLessThanOrEqual(2000);
    expect(discordTest!.embeds[0]!.title).toBe('webhook.test');
  });

  it('a Slack or Discord endpoint must post to its service (or a loopback stand-in where local receivers are allowed); the format is shown and can be changed', async () => {
    const p = await newProject();
    const create = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/webhooks`, headers: session(), payload });
    const refused = await create({ url: 'https://public.test/hook', format: 'slack', events: ['webhook.test'] });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: 'invalid_request' });
    expect((await create({ url: 'https://public.test/hook', format: 'teams' })).statusCode).toBe(400);
    const slack = await create({ url: 'https://hooks.slack.com/services/T0/B0/x', format: 'slack', events: ['webhook.test'] });
    expect(slack.statusCode, slack.body).toBe(201);
    expect(slack.json().endpoint.format).toBe('slack');
    const id = slack.json().endpoint.id;
    const toDiscord = await t.app.inject({ method: 'PATCH', url: `/v1/projects/${p.slug}/webhooks/${id}`, headers: session(), payload: { format: 'discord' } });
    expect(toDiscord.statusCode).toBe(400);
    const toStandard = await t.app.inject({
      method: 'PATCH',
      url: `/v1/projects/${p.slug}/webhooks/${id}`,
      headers: session(),
      payload: { format: 'standard' },
    });
    expect(toStandard.statusCode).toBe(200);
    expect(toStandard.json().endpoint.format).toBe('standard');
    const list = await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/webhooks`, headers: session() });
    expect(list.json().endpoints.map((e: { format: string }) => e.format)).toEqual(['standard']);
  });
});
