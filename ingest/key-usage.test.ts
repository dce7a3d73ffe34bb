import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIngestProject } from '../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../test/support/test-edge.ts';

/** Issue 23: an ingest key used for hundreds of events said "Last used: never". */
let edge: TestEdge;
beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => edge?.close());

const lastUsed = async (keyId: string) =>
  (await edge.platform.db.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE id = $1', [keyId])).rows[0]!.last_used_at;

describe("ingest keys' last use", () => {
  it('is recorded for keys of accepted requests (errors, analytics, flags), in one write per flush, not for refused ones', async () => {
    const used = await createIngestProject(edge.platform);
    const flagsOnly = await createIngestProject(edge.platform);
    const refused = await createIngestProject(edge.platform);
    await edge.settingsRefreshed();
    const post = (key: string, path: string, body: unknown) =>
      fetch(`${edge.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (let i = 0; i < 5; i++) expect((await post(used.ingestKey, '/v1/errors/i', { batch: [{ name: 'E', message: `m${i}` }] })).status).toBe(202);
    expect((await post(used.ingestKey, '/v1/analytics/i', { batch: [{ event: 'e', distinctId: 'u' }] })).status).toBe(202);
    expect((await fetch(`${edge.base}/v1/flags/i?distinctId=u`, { headers: { authorization: `Bearer ${flagsOnly.ingestKey}` } })).status).toBe(200);
    expect((await post(refused.ingestKey, '/v1/errors/i', { batch: [] })).status).toBe(400);
    expect(await lastUsed(used.keyId)).toBeNull(); // not on the request path
    await edge.server.keyUsage.flush();
    expect(await lastUsed(used.keyId)).toBeInstanceOf(Date);
    expect(await lastUsed(flagsOnly.keyId)).toBeInstanceOf(Date);
    expect(await lastUsed(refused.keyId)).toBeNull();
  });
});
