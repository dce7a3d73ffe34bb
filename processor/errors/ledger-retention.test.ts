import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Platform } from '../../platform/platform.ts';
import { createTestPlatform } from '../../test/support/platform.ts';
import { pruneConsumedLedger } from './ledger-retention.ts';

let platform: Platform;
beforeAll(async () => {
  platform = await createTestPlatform();
});
afterAll(async () => platform?.close());

/** Ledger rows consumed `ageMs` ago (database time), under a project id of this test's own. */
async function ledgerRows(n: number, ageMs: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  await platform.db.query(
    `INSERT INTO error_events_consumed (event_id, project_id, outcome, consumed_at) SELECT id, 'prj_retention', 'accepted', now() - make_interval(secs => $2) FROM unnest($1::text[]) AS id`,
    [ids, ageMs / 1000],
  );
  return ids;
}

async function left(ids: string[]): Promise<string[]> {
  const r = await platform.db.query<{ event_id: string }>('SELECT event_id FROM error_events_consumed WHERE event_id = ANY($1::text[])', [ids]);
  return r.rows.map((x) => x.event_id).sort();
}

const DAY = 24 * 3600 * 1000;

describe('consumed-events ledger retention', () => {
  it('deletes every row older than the retention, in batches smaller than the backlog, and keeps newer rows', async () => {
    const old = await ledgerRows(25, 8 * DAY);
    const fresh = await ledgerRows(3, 1 * DAY);
    expect(await pruneConsumedLedger(platform.db, { keepMs: 7 * DAY, batchSize: 10 })).toBeGreaterThanOrEqual(25);
    expect(await left([...old, ...fresh])).toEqual([...fresh].sort());
  });
});
