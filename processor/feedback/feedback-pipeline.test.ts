import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipelineConsumer } from '../pipeline-consumer.ts';
import { startErrorConsumer } from '../errors/error-consumer.ts';
import { batch, event } from '../errors/error-pipeline.test-scenarios.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { ClientItemsMessage, FeedbackItem } from '../../schemas/bus/client-items.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { processed } from '../../test/support/platform.ts';
import { createFeedbackHandler } from './feedback-pipeline.ts';
import { feedbackMaintenance } from './feedback-retention.ts';

/**
 * The feedback pipeline (issue 40) on the embedded platform: the handler the client-items consumer calls, over
 * messages as schemas/bus/client-items.ts defines them, beside the real error pipeline for the events feedback names.
 */
describe('feedback pipeline', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let errors: PipelineConsumer<string>;
  let handle: ReturnType<typeof createFeedbackHandler>;
  let cookie: string;

  beforeAll(async () => {
    t = await buildTestApi();
    errors = (await startErrorConsumer(t.platform, { ledgerPruneIntervalMs: false })) as PipelineConsumer<string>;
    handle = createFeedbackHandler(t.platform);
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await errors?.stop();
    await t?.close();
  });

  const newProject = () => createProject(t.app, cookie, { environmentHosts: { production: ['app.example.com'] } });
  const item = (over: Partial<FeedbackItem> = {}): FeedbackItem => ({
    id: randomUUID().replaceAll('-', ''),
    source: 'feedback',
    message: 'The save button does nothing',
    timestamp: Date.now(),
    ...over,
  });
  const message = (projectId: string, feedback: FeedbackItem[], over: Partial<ClientItemsMessage> = {}): ClientItemsMessage => ({
    v: 1,
    batchId: randomUUID(),
    projectId,
    originHost: 'app.example.com',
    receivedAt: Date.now(),
    feedback,
    ...over,
  });
  /** An error event as the Sentry edge stamps it: its own id, the SDK's id in extra.sentry.eventId. */
  const storeError = async (projectId: string, sentryEventId: string, name = 'SaveError') => {
    const e = event({ name, extra: { sentry: { eventId: sentryEventId } } });
    await t.platform.bus.publish(TOPICS.errorEvents, [{ key: projectId, value: encodeErrorBatchV1(batch(projectId, [e])) }]);
    await processed(t.platform);
    const g = await t.platform.db.query<{ id: string }>('SELECT id FROM error_groups WHERE project_id = $1 AND name = $2', [projectId, name]);
    return { eventId: e.eventId, groupId: g.rows[0]!.id };
  };
  const rows = async (projectId: string) =>
    (
      await t.platform.db.query<{
        id: string;
        group_id: string | null;
        environment: string;
        message: string;
        name: string | null;
        email: string | null;
        url: string | null;
      }>('SELECT id, group_id, environment, message, name, email, url FROM feedback WHERE project_id = $1 ORDER BY id', [projectId])
    ).rows;

  it('links feedback to the issue of the event it names, by the SDK event id or ours, and stamps the environment', async () => {
    const p = await newProject();
    const sentryId = randomUUID().replaceAll('-', '');
    const stored = await storeError(p.id, sentryId);
    const bySdkId = item({ eventId: sentryId });
    const byOurId = item({ eventId: stored.eventId });
    const summary = await handle([message(p.id, [bySdkId, byOurId])]);
    expect(summary).toEqual({ accepted: 2, duplicates: 0, dropped: {} });
    const got = await rows(p.id);
    expect(got.map((r) => [r.group_id, r.environment])).toEqual([
      [stored.groupId, 'production'],
      [stored.groupId, 'production'],
    ]);
  });

  it('keeps feedback whose event is unknown unlinked; feedback that arrives before its event is linked by the later pass', async () => {
    const p = await newProject();
    const other = await newProject();
    const early = randomUUID().replaceAll('-', '');
    const never = randomUUID().replaceAll('-', '');
    // Another project's event: named by this project's feedback, it links to nothing.
    const foreign = randomUUID().replaceAll('-', '');
    await storeError(other.id, foreign, 'ForeignError');
    const first = item({ eventId: early });
    const lost = item({ eventId: never });
    const crossed = item({ eventId: foreign });
    expect(await handle([message(p.id, [first, lost, crossed])])).toMatchObject({ accepted: 3 });
    expect((await rows(p.id)).map((r) => r.group_id)).toEqual([null, null, null]);

    const stored = await storeError(p.id, early, 'LateError');
    expect(await feedbackMaintenance(t.platform.db)).toBeGreaterThanOrEqual(1);
    const linked = new Map((await rows(p.id)).map((r) => [r.id, r.group_id]));
    expect(linked.get(first.id)).toBe(stored.groupId);
    expect(linked.get(lost.id)).toBeNull();
    expect(linked.get(crossed.id)).toBeNull();
  });

  it('scrubs message, name, e-mail and URL with the error rules; keeps a plain e-mail address', async () => {
    const p = await newProject();
    const f = item({
      message: 'It broke after I pasted my key sk_live_abcdefghijklmnop1234 and password=hunter2',
      name: 'Ann token=abc123def456',
      email: 'ann@example.com',
      url: 'https://user:pa55word@app.example.com/settings?api_key=secret123&tab=2',
    });
    const secretEmail = item({ email: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789' });
    await handle([message(p.id, [f, secretEmail])]);
    const byId = new Map((await rows(p.id)).map((r) => [r.id, r]));
    const got = byId.get(f.id)!;
    expect(got.message).toBe('It broke after I pasted my key [Filtered] and password=[Filtered]');
    expect(got.name).toBe('Ann token=[Filtered]');
    expect(got.email).toBe('ann@example.com');
    expect(got.url).toBe('https://[Filtered]@app.example.com/settings?api_key=[Filtered]&tab=2');
    expect(byId.get(secretEmail.id)!.email).toBe('[Filtered]');
  });

  it('is idempotent per item id: a re-delivery and an id twice in one delivery store one row', async () => {
    const p = await newProject();
    const f = item();
    const m = message(p.id, [f, { ...f }]);
    expect(await handle([m])).toEqual({ accepted: 1, duplicates: 1, dropped: {} });
    expect(await handle([m, message(p.id, [f])])).toEqual({ accepted: 0, duplicates: 3, dropped: {} });
    expect(await rows(p.id)).toHaveLength(1);
    // The same id in another project is another feedback.
    const q = await newProject();
    expect(await handle([message(q.id, [f])])).toMatchObject({ accepted: 1 });
  });

  it('counts drops by reason: a blank message, a project that does not exist', async () => {
    const p = await newProject();
    const summary = await handle([message(p.id, [item({ message: '  \n ' })]), message('prj_gone', [item()])]);
    expect(summary).toEqual({ accepted: 0, duplicates: 0, dropped: { feedback_empty_message: 1, feedback_unknown_project: 1 } });
  });

  it('prunes feedback past retention', async () => {
    const p = await newProject();
    const old = item();
    await handle([message(p.id, [old, item()], { receivedAt: Date.now() - 100 * 24 * 3600 * 1000 })]);
    await handle([message(p.id, [item()])]);
    expect(await rows(p.id)).toHaveLength(3);
    await feedbackMaintenance(t.platform.db, { batchSize: 1 });
    expect(await rows(p.id)).toHaveLength(1);
  });
});
