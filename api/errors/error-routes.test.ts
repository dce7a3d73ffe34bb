import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MailMessage, Mailer } from '../../platform/ports/mailer.ts';
import { ManualClock } from '../../platform/clock.ts';
import { startErrorConsumer } from '../../processor/errors/error-consumer.ts';
import type { Subscription } from '../../platform/ports/bus.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';

/** The errors API (spec §4.5, §3.1) over events that went through the real pipeline. */
describe('errors API', () => {
  const clock = new ManualClock();
  const mails: MailMessage[] = [];
  let failMail = false;
  const mailer: Mailer = {
    adapter: 'file',
    async send(m) {
      if (failMail) throw new Error('smtp down');
      mails.push(m);
    },
    async close() {},
  };
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let sub: Subscription;
  let cookie: string;

  beforeAll(async () => {
    t = await buildTestApi({ overrides: { clock, mailer } });
    sub = await startErrorConsumer(t.platform);
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await sub?.stop();
    await t?.close();
  });

  /** Publish and wait until the pipeline processed it (the bus's publish resolves once its log holds the batch). */
  const publish = async (m: StampedErrorBatch) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: m.projectId, value: encodeErrorBatchV1(m) }]);
    await processed(t.platform);
  };
  const newProject = () => createProject(t.app, cookie, { environmentHosts: { production: ['app.example.com'] } });
  const get = (url: string, headers = sessionHeaders(cookie)) => t.app.inject({ method: 'GET', url, headers });
  const post = (url: string, headers = sessionHeaders(cookie)) => t.app.inject({ method: 'POST', url, headers, payload: {} });
  const patch = (url: string, payload: object, headers = sessionHeaders(cookie)) => t.app.inject({ method: 'PATCH', url, headers, payload });

  it('lists unresolved issues by count with cursor pagination, filters by status and environment', async () => {
    const p = await newProject();
    const events = [
      ...Array.from({ length: 3 }, () => event({ name: 'Three' })),
      ...Array.from({ length: 2 }, () => event({ name: 'Two' })),
      event({ name: 'One' }),
    ];
    await publish(batch(p.id, events));
    await publish(batch(p.id, [event({ name: 'Preview' })], { originHost: null }));
    const page1 = await get(`/v1/projects/${p.slug}/errors?limit=2`);
    expect(page1.statusCode).toBe(200);
    const b1 = page1.json();
    expect(b1.data.map((i: { name: string; count: number }) => [i.name, i.count])).toEqual([
      ['Three', 3],
      ['Two', 2],
    ]);
    expect(b1.hasMore).toBe(true);
    const b2 = (await get(`/v1/projects/${p.slug}/errors?limit=2&cursor=${b1.nextCursor}`)).json();
    expect(b2.data.map((i: { name: string }) => i.name).sort()).toEqual(['One', 'Preview']);
    expect(b2).toMatchObject({ hasMore: false, nextCursor: null });
    const prod = (await get(`/v1/projects/${p.slug}/errors?environment=production`)).json();
    expect(prod.data.map((i: { name: string }) => i.name)).toEqual(['Three', 'Two', 'One']);
    const unknown = (await get(`/v1/projects/${p.slug}/errors?environment=unknown`)).json();
    expect(unknown.data.map((i: { name: string }) => i.name)).toEqual(['Preview']);

    // §2.6 names the issue's id groupId: a client written from the spec finds it in list and detail items.
    const id = b1.data[0].groupId;
    expect(id).toMatch(/^grp_/);
    expect(b1.data[0].id).toBe(id);
    expect((await get(`/v1/projects/${p.slug}/errors/${id}`)).json().issue).toMatchObject({ groupId: id, name: 'Three' });
    expect((await post(`/v1/projects/${p.slug}/errors/${id}/resolve`)).statusCode).toBe(200);
    expect((await get(`/v1/projects/${p.slug}/errors`)).json().data.map((i: { name: string }) => i.name)).not.toContain('Three');
    expect((await get(`/v1/projects/${p.slug}/errors?status=resolved`)).json().data.map((i: { id: string }) => i.id)).toEqual([id]);

    expect((await get(`/v1/projects/${p.slug}/errors?status=open`)).json().error).toBe('invalid_request');
    expect((await get(`/v1/projects/${p.slug}/errors?cursor=bogus`)).json().error).toBe('invalid_request');
  });

  it('sorts by last seen with its own cursor, and searches name, message and culprit literally', async () => {
    const p = await newProject();
    const at = Date.UTC(2026, 10, 21, 12, 0, 0);
    // Old and frequent, new and rare: the two sorts disagree.
    await publish(
      batch(
        p.id,
        Array.from({ length: 4 }, () => event({ name: 'OldFrequent', message: 'cart 100% full' })),
        { receivedAt: at },
      ),
    );
    await publish(batch(p.id, [event({ name: 'Middle', message: 'checkout_total wrong' })], { receivedAt: at + 60_000 }));
    await publish(batch(p.id, [event({ name: 'NewRare', message: 'profile missing' })], { receivedAt: at + 120_000 }));
    const names = (b: { data: Array<{ name: string }> }) => b.data.map((i) => i.name);
    expect(names((await get(`/v1/projects/${p.slug}/errors`)).json())[0]).toBe('OldFrequent');
    const l1 = (await get(`/v1/projects/${p.slug}/errors?sort=lastSeen&limit=2`)).json();
    expect(names(l1)).toEqual(['NewRare', 'Middle']);
    const l2 = (await get(`/v1/projects/${p.slug}/errors?sort=lastSeen&limit=2&cursor=${l1.nextCursor}`)).json();
    expect(names(l2)).toEqual(['OldFrequent']);
    expect(l2.hasMore).toBe(false);
    // A cursor belongs to its sort.
    expect((await get(`/v1/projects/${p.slug}/errors?sort=count&cursor=${l1.nextCursor}`)).json().error).toBe('invalid_request');

    expect(names((await get(`/v1/projects/${p.slug}/errors?query=PROFILE`)).json())).toEqual(['NewRare']);
    expect(names((await get(`/v1/projects/${p.slug}/errors?query=middle`)).json())).toEqual(['Middle']);
    // % and _ are literal characters, not wildcards.
    expect(names((await get(`/v1/projects/${p.slug}/errors?query=100%25`)).json())).toEqual(['OldFrequent']);
    expect(names((await get(`/v1/projects/${p.slug}/errors?query=${encodeURIComponent('o_t')}`)).json())).toEqual([]);
    expect(names((await get(`/v1/projects/${p.slug}/errors?query=checkout_total`)).json())).toEqual(['Middle']);
    const id = l1.data[0].groupId;
    expect(names((await get(`/v1/projects/${p.slug}/errors?query=${id}`)).json())).toEqual(['NewRare']);
    expect((await get(`/v1/projects/${p.slug}/errors?sort=recent`)).json().error).toBe('invalid_request');
  });

  it('moves several issues at once and names the ones it skipped with the reason', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event({ name: 'A' }), event({ name: 'B' }), event({ name: 'C' })]));
    const all = (await get(`/v1/projects/${p.slug}/errors`)).json().data as Array<{ name: string; groupId: string }>;
    const id = (n: string) => all.find((i) => i.name === n)!.groupId;
    expect((await post(`/v1/projects/${p.slug}/errors/${id('C')}/ignore`)).statusCode).toBe(200);
    const bulk = (payload: object) => t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/errors/bulk`, headers: sessionHeaders(cookie), payload });
    const r = await bulk({ action: 'resolve', groupIds: [id('A'), id('B'), id('C'), 'grp_nope', id('A')] });
    expect(r.statusCode).toBe(200);
    const body = r.json();
    expect(body.updated.map((i: { name: string; status: string }) => [i.name, i.status]).sort()).toEqual([
      ['A', 'resolved'],
      ['B', 'resolved'],
    ]);
    expect(body.skipped).toEqual([
      { groupId: id('C'), error: 'invalid_transition', message: 'cannot resolve an issue that is ignored', status: 'ignored' },
      { groupId: 'grp_nope', error: 'not_found', message: 'no such issue in this project', status: null },
    ]);
    const reopen = (await bulk({ action: 'reopen', groupIds: [id('A'), id('C')] })).json();
    expect(reopen.updated.map((i: { status: string }) => i.status)).toEqual(['unresolved', 'unresolved']);
    expect(
      (await get(`/v1/projects/${p.slug}/errors`))
        .json()
        .data.map((i: { name: string }) => i.name)
        .sort(),
    ).toEqual(['A', 'C']);
    expect((await bulk({ action: 'delete', groupIds: [id('A')] })).json().error).toBe('invalid_request');
    expect((await bulk({ action: 'resolve', groupIds: [] })).json().error).toBe('invalid_request');
    expect((await bulk({ action: 'resolve', groupIds: Array.from({ length: 101 }, (_, i) => `grp_${i}`) })).statusCode).toBe(400);
    // an errors:read key cannot change anything
    const key = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const denied = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${p.slug}/errors/bulk`,
      headers: bearer(key.token),
      payload: { action: 'resolve', groupIds: [id('A')] },
    });
    expect(denied.statusCode).toBe(403);
  });

  it('shows one issue with stack, samples, suggestion and env counts; unknown ids are 404', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event({ extra: { password: 'hunter2', plan: 'pro' } })]));
    const [summary] = (await get(`/v1/projects/${p.slug}/errors`)).json().data;
    const res = await get(`/v1/projects/${p.slug}/errors/${summary.id}`);
    expect(res.statusCode).toBe(200);
    const { issue } = res.json();
    expect(issue).toMatchObject({ id: summary.id, status: 'unresolved', count: 1, envCounts: { production: 1 }, regressionCount: 0 });
    expect(issue.stack).toContain('loadUser');
    expect(issue.suggestion).toMatch(/^Hint, not a diagnosis/);
    expect(issue.culprit).toContain('loadUser');
    expect(issue.samples[0].extra).toEqual({ password: '[Filtered]', plan: 'pro' });
    const missing = await get(`/v1/projects/${p.slug}/errors/grp_000000000000000000000000`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe('not_found');
    // another project's issue is not reachable through this project
    const other = await newProject();
    expect((await get(`/v1/projects/${other.slug}/errors/${summary.id}`)).statusCode).toBe(404);
  });

  it('applies the §3.1 transitions and refuses the others with 409 invalid_transition', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event()]));
    const [{ id }] = (await get(`/v1/projects/${p.slug}/errors`)).json().data;
    const url = (a: string) => `/v1/projects/${p.slug}/errors/${id}/${a}`;
    const step = async (a: string) => {
      const r = await post(url(a));
      return r.statusCode === 200 ? r.json().issue.status : `${r.statusCode} ${r.json().error}`;
    };
    expect(await step('reopen')).toBe('409 invalid_transition');
    // The answer is the issue as GET shows it, samples and stack included (issue 23: the console showed 0 events).
    const before = (await get(`/v1/projects/${p.slug}/errors/${id}`)).json().issue;
    const resolved = (await post(url('resolve'))).json().issue;
    expect(resolved).toEqual({ ...before, status: 'resolved' });
    expect(resolved.samples.length).toBeGreaterThan(0);
    expect(await step('reopen')).toBe('unresolved');
    expect(await step('resolve')).toBe('resolved');
    expect(await step('resolve')).toBe('409 invalid_transition');
    expect(await step('ignore')).toBe('409 invalid_transition');
    expect(await step('reopen')).toBe('unresolved');
    expect(await step('ignore')).toBe('ignored');
    expect(await step('ignore')).toBe('409 invalid_transition');
    expect(await step('resolve')).toBe('409 invalid_transition');
    expect(await step('reopen')).toBe('unresolved');
    expect((await post(`/v1/projects/${p.slug}/errors/grp_nope/resolve`)).json().error).toBe('not_found');
    // a resolved issue with a fresh occurrence is a regression, visible through the API
    expect(await step('resolve')).toBe('resolved');
    await publish(batch(p.id, [event()]));
    const { issue } = (await get(`/v1/projects/${p.slug}/errors/${id}`)).json();
    expect(issue).toMatchObject({ status: 'unresolved', regressionCount: 1, count: 2 });
  });

  it('reads and changes error settings; errors/settings is not a group id', async () => {
    const p = await newProject();
    const url = `/v1/projects/${p.slug}/errors/settings`;
    expect((await get(url)).json()).toEqual({ paused: false, ingestOrigins: [] });
    const ok = await patch(url, { paused: true, ingestOrigins: ['App.Example.com', 'app.example.com', 'localhost', 'Localhost:5173'] });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ paused: true, ingestOrigins: ['app.example.com', 'localhost', 'localhost:5173'] });
    expect((await get(url)).json()).toEqual({ paused: true, ingestOrigins: ['app.example.com', 'localhost', 'localhost:5173'] });
    // `*.` patterns, with the rules domains use (issue 23): preview hosts are allowed without clearing the list.
    const wild = await patch(url, { ingestOrigins: ['*.localhost', '*.Preview.example.com:8443', 'app.example.com'] });
    expect(wild.statusCode, wild.body).toBe(200);
    expect(wild.json().ingestOrigins).toEqual(['*.localhost', '*.preview.example.com:8443', 'app.example.com']);
    await patch(url, { ingestOrigins: ['app.example.com', 'localhost', 'localhost:5173'] });
    for (const bad of [
      { ingestOrigins: ['*'] },
      { ingestOrigins: ['*.'] },
      { ingestOrigins: ['a.*.com'] },
      { ingestOrigins: ['**.x.com'] },
      { ingestOrigins: ['https://x.com'] },
      { ingestOrigins: ['x.com/path'] },
      { ingestOrigins: ['a b'] },
      { ingestOrigins: ['x.com:'] },
      { ingestOrigins: ['x.com:70000'] },
      { ingestOrigins: Array.from({ length: 21 }, (_, i) => `h${i}.example.com`) },
      { paused: 'yes' },
      { other: 1 },
    ]) {
      const r = await patch(url, bad);
      expect(r.statusCode, JSON.stringify(bad)).toBe(400);
      expect(r.json().error).toBe('invalid_request');
    }
    const twenty = Array.from({ length: 20 }, (_, i) => `h${i}.example.com`);
    expect((await patch(url, { ingestOrigins: twenty })).json().ingestOrigins).toHaveLength(20);
  });

  it('reads and changes alert settings and recipients', async () => {
    const p = await newProject();
    const url = `/v1/projects/${p.slug}/error-alerts`;
    expect((await get(url)).json()).toEqual({ enabled: true, recipients: [], suppressed: [] });
    expect((await patch(url, { enabled: false, recipients: ['Ops@Example.test', 'dev@example.test'] })).json()).toEqual({
      enabled: false,
      recipients: ['dev@example.test', 'ops@example.test'],
      suppressed: [],
    });
    expect((await patch(url, { recipients: ['not-an-email'] })).json().error).toBe('invalid_request');
    expect((await patch(url, { enabled: true })).json()).toEqual({ enabled: true, recipients: ['dev@example.test', 'ops@example.test'], suppressed: [] });
    // disabled alerts: the pipeline sends no mail for a new production issue
    await patch(url, { enabled: false });
    const before = mails.length;
    await publish(batch(p.id, [event({ name: 'Silent' })]));
    expect(mails.length).toBe(before);
  });

  it('sends a real test alert at most once per 15 minutes per project', async () => {
    const p = await newProject();
    await patch(`/v1/projects/${p.slug}/error-alerts`, { recipients: ['oncall@example.test'] });
    const url = `/v1/projects/${p.slug}/error-alerts/test`;
    const first = await post(url);
    expect(first.statusCode).toBe(202);
    expect(first.json()).toEqual({ sent: true, to: ['oncall@example.test'] });
    expect(mails[mails.length - 1]).toMatchObject({ to: ['oncall@example.test'], subject: expect.stringContaining('Test error alert') });
    clock.advance(10 * 60 * 1000);
    const second = await post(url);
    expect(second.statusCode).toBe(429);
    expect(second.json().error).toBe('rate_limited');
    expect(second.headers['retry-after']).toBe('300');
    // another project has its own window
    const q = await newProject();
    expect((await post(`/v1/projects/${q.slug}/error-alerts/test`)).statusCode).toBe(202);
    clock.advance(5 * 60 * 1000);
    expect((await post(url)).statusCode).toBe(202);
    // a mail failure gives the slot back
    clock.advance(16 * 60 * 1000);
    failMail = true;
    try {
      expect((await post(url)).statusCode).toBe(503);
    } finally {
      failMail = false;
    }
    expect((await post(url)).statusCode).toBe(202);
  });

  it('checks credentials: scopes for keys, no ingest keys, no other projects', async () => {
    const p = await newProject();
    await publish(batch(p.id, [event()]));
    const reader = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const writer = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read', 'errors:write'] });
    const ingest = await createKey(t.app, cookie, p.slug, { kind: 'ingest' });
    const list = `/v1/projects/${p.slug}/errors`;
    expect((await get(list, bearer(reader.token))).statusCode).toBe(200);
    const [{ id }] = (await get(list, bearer(reader.token))).json().data;
    expect((await post(`${list}/${id}/resolve`, bearer(reader.token))).statusCode).toBe(403);
    expect((await patch(`${list}/settings`, { paused: true }, bearer(reader.token))).statusCode).toBe(403);
    expect((await post(`/v1/projects/${p.slug}/error-alerts/test`, bearer(reader.token))).statusCode).toBe(403);
    expect((await post(`${list}/${id}/resolve`, bearer(writer.token))).statusCode).toBe(200);
    const ing = await get(list, bearer(ingest.token));
    expect([401, 403]).toContain(ing.statusCode);
    expect((await get(list, {})).statusCode).toBe(401);
    // a key of another project does not reach this one
    const other = await newProject();
    const otherKey = await createKey(t.app, cookie, other.slug, { kind: 'live', scopes: ['errors:read'] });
    expect((await get(list, bearer(otherKey.token))).statusCode).toBe(404);
    // another user's session does not reach it either
    const stranger = await signUpAndSignIn(t.app, t.platform);
    expect((await get(list, sessionHeaders(stranger.cookie))).statusCode).toBe(404);
  });
});
