import { describe, expect, it } from 'vitest';
import { ServiceError } from '../schemas/error-codes.ts';
import { timeCursor } from './time-cursor.ts';

describe('the (time, id) cursor of a newest-first list', () => {
  it('gives back the time and id it was made from', () => {
    expect(timeCursor.decode(timeCursor.encode(new Date(1_700_000_000_123), 'msg_a'))).toEqual({ at: '2023-11-14T22:13:20.123Z', id: 'msg_a' });
    expect(timeCursor.decode(timeCursor.encode('2026-01-02T03:04:05.000Z', 'dpl_b'))).toEqual({ at: '2026-01-02T03:04:05.000Z', id: 'dpl_b' });
  });

  it('refuses one it did not give out as 400 invalid_request, naming the cursor', () => {
    const forged = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const bad of [
      '',
      'not-a-cursor',
      forged(null),
      forged([1, 'a']),
      forged({ at: 'yesterday', id: 'a' }),
      forged({ at: '2026-01-01T00:00:00Z', id: 7 }),
    ]) {
      let thrown: unknown;
      try {
        timeCursor.decode(bad);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, bad).toBeInstanceOf(ServiceError);
      expect((thrown as ServiceError).toBody()).toMatchObject({ error: 'invalid_request', fields: [{ path: 'querystring.cursor' }] });
    }
  });

  it('makes a page of limit items from limit + 1 rows, with the cursor of its last item only when more follow', () => {
    const rows = [3, 2, 1].map((n) => ({ id: `r${n}`, at: new Date(n * 1000) }));
    const key = (r: (typeof rows)[number]) => ({ at: r.at, id: r.id });
    const more = timeCursor.page(rows, 2, (r) => r.id, key);
    expect(more).toMatchObject({ data: ['r3', 'r2'], hasMore: true });
    expect(timeCursor.decode(more.nextCursor!)).toEqual({ at: new Date(2000).toISOString(), id: 'r2' });
    expect(timeCursor.page(rows, 3, (r) => r.id, key)).toEqual({ data: ['r3', 'r2', 'r1'], hasMore: false, nextCursor: null });
    expect(timeCursor.page([], 3, (r: (typeof rows)[number]) => r.id, key)).toEqual({ data: [], hasMore: false, nextCursor: null });
  });
});
