import { describe, expect, it } from 'vitest';
import { aggregateRow, AGGREGATE_ITEM_BASE, MAX_AGE_MS, updateRow } from './row-step.ts';

const stamp = { projectId: 'p', batchId: 'b', receivedAt: Date.UTC(2026, 10, 20, 12, 30, 15), environment: 'production', deployId: 'dep_a', release: 'abc' };
const update = { sid: 's', init: true, status: 'ok' as const, errors: 0, started: Date.UTC(2026, 10, 20, 12, 1, 59), timestamp: 0 };

describe('release-health rows', () => {
  it('an update: flags by init and status, errored when it saw an error, bucketed by the minute it started', () => {
    const ok = updateRow(update, 3, stamp);
    expect(ok).toEqual({
      kind: 'ok',
      value: expect.objectContaining({
        item: 3,
        kind: 'update',
        session_id: 's',
        distinct_id: '',
        started: 1,
        crashed: 0,
        errored: 0,
        abnormal: 0,
        exited: 0,
        bucket: '2026-11-20 12:01:00',
      }),
    });
    const crashed = updateRow({ ...update, init: false, status: 'crashed', errors: 1, did: 'u' }, 0, stamp);
    expect(crashed.kind === 'ok' && crashed.value).toMatchObject({ started: 0, crashed: 1, unhandled: 0, errored: 1, distinct_id: 'u' });
    const unhandled = updateRow({ ...update, init: false, status: 'unhandled', errors: 1 }, 0, stamp);
    expect(unhandled.kind === 'ok' && unhandled.value).toMatchObject({ crashed: 0, unhandled: 1, errored: 1 });
    const errored = updateRow({ ...update, status: 'errored' }, 0, stamp);
    expect(errored.kind === 'ok' && errored.value).toMatchObject({ errored: 1 });
  });

  it('a start after the edge received it is counted then; one more than five days before is dropped', () => {
    const ahead = updateRow({ ...update, started: stamp.receivedAt + 3_600_000 }, 0, stamp);
    expect(ahead.kind === 'ok' && ahead.value.bucket).toBe('2026-11-20 12:30:00');
    expect(updateRow({ ...update, started: stamp.receivedAt - MAX_AGE_MS - 1 }, 0, stamp)).toEqual({ kind: 'drop', reason: 'session_too_old' });
    expect(updateRow({ ...update, started: stamp.receivedAt - MAX_AGE_MS }, 0, stamp).kind).toBe('ok');
  });

  it('an aggregate: started is the sum of its outcomes, numbered after the updates', () => {
    const a = aggregateRow({ started: update.started, exited: 5, errored: 2, abnormal: 1, crashed: 3, unhandled: 4 }, 1, stamp);
    expect(a.kind === 'ok' && a.value).toMatchObject({
      item: AGGREGATE_ITEM_BASE + 1,
      kind: 'aggregate',
      session_id: '',
      started: 15,
      crashed: 3,
      unhandled: 4,
      errored: 2,
    });
  });
});
