import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { pruneConsumedLedger, schedulePruning } from './ledger-retention.ts';

/** A ledger of `rows` old rows that DELETE ... LIMIT $2 drains. */
function fakeLedger(rows: number) {
  const statements: unknown[][] = [];
  const db: Queryable = {
    async query(_sql, params = []) {
      statements.push(params);
      const n = Math.min(rows, params[1] as number);
      rows -= n;
      return { rows: [], rowCount: n };
    },
  };
  return { db, statements, left: () => rows };
}

describe('consumed-events ledger retention', () => {
  it('deletes in batches until a batch comes back short, with the retention in seconds', async () => {
    const l = fakeLedger(25);
    expect(await pruneConsumedLedger(l.db, { keepMs: 7_000, batchSize: 10 })).toBe(25);
    expect(l.statements).toEqual([[7, 10], [7, 10], [7, 10]]);
  });

  it('prunes on a schedule until stopped', async () => {
    const l = fakeLedger(1_000_000);
    const s = schedulePruning(l.db, pino({ level: 'silent' }), 5);
    await new Promise((r) => setTimeout(r, 100));
    await s.stop();
    const calls = l.statements.length;
    expect(calls).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(l.statements.length).toBe(calls);
  });
});
