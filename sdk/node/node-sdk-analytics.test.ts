import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { createIngestProject, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { init } from './index.ts';

/** The Node SDK's analytics capture and feature flags, against a real edge. */
let edge: TestEdge;
let p: IngestProject;

beforeAll(async () => {
  edge = await startTestEdge();
  p = await createIngestProject(edge.platform);
  const flag = { key: 'beta', description: '', enabled: true, rolloutPercentage: 100, variants: [{ key: 'b', weight: 100 }], conditions: [] };
  await edge.platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, 'beta', $3::jsonb)`, [
    newId('flg_'),
    p.projectId,
    JSON.stringify(flag),
  ]);
  await edge.settingsRefreshed();
});
afterAll(async () => edge?.close());

describe('the Node SDK: analytics and flags', () => {
  it('captures analytics events in batches with a uuid, the time and the deploy', async () => {
    const client = init({ ingestKey: p.ingestKey, baseUrl: edge.base, deployId: 'dep_abc', captureUncaught: false, onError: () => undefined });
    client.capture('signup', 'user-1', { plan: 'pro' });
    client.capture('pageview', 'user-1');
    expect(await client.flush()).toBe(true);
    await client.close();
    const events = edge.bus.published
      .filter((m) => m.topic === TOPICS.analyticsEvents)
      .flatMap((m) => m.messages.map((x) => JSON.parse(x.value.toString()) as { projectId: string; events: Array<Record<string, unknown>> }))
      .filter((b) => b.projectId === p.projectId)
      .flatMap((b) => b.events);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      event: 'signup',
      distinctId: 'user-1',
      properties: { plan: 'pro' },
      deployId: 'dep_abc',
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });

  it('asks for flags, answers unknown ones off, and never throws when the service is away', async () => {
    const errors: unknown[] = [];
    const client = init({ ingestKey: p.ingestKey, baseUrl: edge.base, captureUncaught: false, onError: (e) => errors.push(e) });
    expect(await client.flags.isEnabled('beta', 'user-1')).toBe(true);
    expect(await client.flags.getVariant('beta', 'user-1')).toBe('b');
    expect(await client.flags.isEnabled('nope', 'user-1')).toBe(false);
    expect(Object.keys(await client.flags.getFlags('user-2'))).toEqual(['beta']);
    await client.close();
    const away = init({ ingestKey: p.ingestKey, baseUrl: 'http://127.0.0.1:9', captureUncaught: false, onError: (e) => errors.push(e) });
    expect(await away.flags.isEnabled('beta', 'user-1')).toBe(false);
    expect(errors.length).toBeGreaterThan(0);
    await away.close();
  });
});
