import type { Page } from '../schemas/api/common.ts';
import { ServiceError } from '../schemas/error-codes.ts';

/**
 * The cursor of a list read newest first by (time, id): the last row's time and id, opaque to the caller (base64url
 * JSON). A repository reads the next page with `(time, id) < (cursor.at, cursor.id)`, ordered `time DESC, id DESC`.
 */
export const timeCursor = {
  encode(at: Date | string, id: string): string {
    return Buffer.from(JSON.stringify({ at: new Date(at).toISOString(), id })).toString('base64url');
  },
  /** A cursor this API gave out, or 400 invalid_request. */
  decode(cursor: string): { at: string; id: string } {
    try {
      const c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (typeof c?.at === 'string' && typeof c.id === 'string' && !Number.isNaN(Date.parse(c.at))) return { at: c.at, id: c.id };
    } catch {
      // said below
    }
    throw new ServiceError('invalid_request', 'cursor is not one this API gave out', { fields: [{ path: 'querystring.cursor', message: 'invalid cursor' }] });
  },
  /** A page of at most `limit` items from the `limit + 1` rows read after the cursor: the extra row says more follow. */
  page<R, T>(rows: R[], limit: number, item: (r: R) => T, key: (r: R) => { at: Date | string; id: string }): Page<T> {
    const kept = rows.slice(0, limit);
    const last = kept[kept.length - 1];
    const hasMore = rows.length > limit;
    return { data: kept.map(item), hasMore, nextCursor: hasMore && last ? timeCursor.encode(key(last).at, key(last).id) : null };
  },
};
