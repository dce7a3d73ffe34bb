import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClientItemsConsumer } from '../../processor/client-items/client-items-consumer.ts';
import { startErrorConsumer } from '../../processor/errors/error-consumer.ts';
import { batch, event } from '../../processor/errors/error-pipeline.test-scenarios.ts';
import type { PipelineConsumer } from '../../processor/pipeline-consumer.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { prng } from '../../test/support/prng.ts';

/** The feedback routes (issue 40) over feedback and events published on the bus and processed by the real consumers. */
describe('feedback API', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  const consumers: Array<PipelineConsumer<string>> = [];
  let cookie: string;

  beforeAll(async () => {
    t = await buildTestApi();
    consumers.push((await startErrorConsumer(t.platform, { ledgerPruneIntervalMs: false })) as PipelineConsumer<string>);
    consumers.push(await startClientItemsConsumer(t.platform));
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    for (const c of consumers) await c.stop();
    await t?.close();
  });

  const newProject = () => createProject(t.app, cookie, { environmentHosts: { production: ['app.example.com'] } });
  const get = (url: string, headers = sessionHeaders(cookie)) => t.app.inject({ method: 'GET', url, headers });
  const sdkId = () => randomUUID().replaceAll('-', '');
  const sendFeedback = async (projectId: string, items: Array<Partial<clientItems.FeedbackItem>>, originHost: string | null = 'app.example.com') => {
    const feedback = items.map((i) => ({ id: sdkId(), source: 'feedback' as const, message: 'hello', timestamp: Date.now(), ...i }));
    const m: clientItems.ClientItemsMessage = { v: 1, batchId: randomUUID(), projectId, originHost, receivedAt: Date.now(), feedback };
    await t.platform.bus.publish(clientItems.TOPIC, [{ key: projectId, value: clientItems.encode(m) }]);
    await processed(t.platform);
    return feedback;
  };
  const sendError = async (projectId: string, slug: string, sentryEventId: string, name: string) => {
    await t.platform.bus.publish(TOPICS.errorEvents, [
      { key: projectId, value: encodeErrorBatchV1(batch(projectId, [event({ name, extra: { sentry: { eventId: sentryEventId } } })])) },
    ]);
    await processed(t.platform);
    const issues = (await get(`/v1/projects/${slug}/errors?query=${name}`)).json();
    return issues.data[0].groupId as string;
  };

  it("lists the project's feedback newest first with cursor pagination, filtered by environment", async () => {
    const p = await newProject();
    await sendFeedback(p.id, [{ message: 'first' }]);
    await sendFeedback(p.id, [{ message: 'second', name: 'Ann', email: 'ann@example.com', url: 'https://app.example.com/x' }]);
    await sendFeedback(p.id, [{ message: 'from a server' }], null);
    const page1 = await get(`/v1/projects/${p.slug}/feedback?limit=2`);
    expect(page1.statusCode).toBe(200);
    const b1 = page1.json();
    expect(b1.data.map((f: { message: string }) => f.message)).toEqual(['from a server', 'second']);
    expect(b1.data[1]).toMatchObject({ name: 'Ann', email: 'ann@example.com', url: 'https://app.example.com/x', environment: 'production', groupId: null });
    expect(b1.hasMore).toBe(true);
    const b2 = (await get(`/v1/projects/${p.slug}/feedback?limit=2&cursor=${b1.nextCursor}`)).json();
    expect(b2).toMatchObject({ data: [{ message: 'first' }], hasMore: false, nextCursor: null });
    const prod = (await get(`/v1/projects/${p.slug}/feedback?environment=production`)).json();
    expect(prod.data.map((f: { message: string }) => f.message)).toEqual(['second', 'first']);
  });

  it("lists an issue's feedback, linked at read time when the feedback arrived before its event", async () => {
    const p = await newProject();
    const early = sdkId();
    const [before] = await sendFeedback(p.id, [{ eventId: early, message: 'came first' }]);
    await sendFeedback(p.id, [{ message: 'about nothing' }]);
    // No background pass has run: the link is the read path's.
    const groupId = await sendError(p.id, p.slug, early, 'EarlyError');
    const [after] = await sendFeedback(p.id, [{ eventId: early, message: 'came after', source: 'user_report' }]);
    const list = (await get(`/v1/projects/${p.slug}/errors/${groupId}/feedback`)).json();
    expect(list.data.map((f: { id: string; groupId: string }) => [f.id, f.groupId])).toEqual([
      [after!.id, groupId],
      [before!.id, groupId],
    ]);
    const all = (await get(`/v1/projects/${p.slug}/feedback`)).json();
    expect(all.data.find((f: { id: string }) => f.id === before!.id).groupId).toBe(groupId);

    const other = await newProject();
    expect((await get(`/v1/projects/${other.slug}/errors/${groupId}/feedback`)).json()).toMatchObject({ error: 'not_found' });
    expect((await get(`/v1/projects/${p.slug}/errors/grp_nope/feedback`)).statusCode).toBe(404);
  });

  it('needs errors:read; refuses a bad cursor and an unknown parameter with a JSON 400', async () => {
    const p = await newProject();
    const reader = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['errors:read'] });
    const other = await createKey(t.app, cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    expect((await get(`/v1/projects/${p.slug}/feedback`, bearer(reader.token))).statusCode).toBe(200);
    expect((await get(`/v1/projects/${p.slug}/feedback`, bearer(other.token))).json()).toMatchObject({ error: 'insufficient_scope' });
    expect((await get(`/v1/projects/${p.slug}/feedback?cursor=zzz`)).json()).toMatchObject({ error: 'invalid_request' });
    expect((await get(`/v1/projects/${p.slug}/feedback?from=1`)).json()).toMatchObject({ error: 'invalid_request' });
    expect((await get(`/v1/projects/${p.slug}/feedback?limit=1000`)).statusCode).toBe(400);
  });

  it('answers any query string with JSON below 500 (seeded fuzz)', async () => {
    const p = await newProject();
    await sendFeedback(p.id, [{ message: 'x' }, { message: 'y' }]);
    const rnd = prng(40);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const goodCursor = Buffer.from(JSON.stringify({ at: new Date().toISOString(), id: 'z' })).toString('base64url');
    for (let i = 0; i < 300; i++) {
      const params: string[] = [];
      for (let k = Math.floor(rnd() * 4); k > 0; k--) {
        const name = pick(['limit', 'cursor', 'environment', 'limit[]', text(3), 'cursor[a]', '__proto__', 'constructor']);
        const value = pick([
          '',
          '0',
          '-1',
          '100',
          '1e3',
          'NaN',
          'production',
          'nope',
          goodCursor,
          Buffer.from('{"at":"x","id":1}').toString('base64url'),
          Buffer.from(JSON.stringify({ at: '9999-99-99', id: 'a' })).toString('base64url'),
          'a'.repeat(600),
          text(20),
        ]);
        params.push(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);
      }
      const path = pick([`/v1/projects/${p.slug}/feedback`, `/v1/projects/${p.slug}/errors/${encodeURIComponent(text(5))}/feedback`]);
      const res = await get(`${path}?${params.join('&')}`);
      expect(res.statusCode, `${path}?${params.join('&')}`).toBeLessThan(500);
      expect(res.headers['content-type']).toMatch(/application\/json/);
    }
    expect((await get(`/v1/projects/${p.slug}/feedback`)).statusCode).toBe(200);
  });
});
