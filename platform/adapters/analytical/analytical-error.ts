import { AnalyticalQueryError } from '../../ports/analytical-store.ts';

/** Read `Code: N. DB::Exception: message. (TYPE)` (chDB and the server both speak it). */
export function toAnalyticalError(err: unknown): AnalyticalQueryError {
  if (err instanceof AnalyticalQueryError) return err;
  const e = err as { message?: unknown; code?: unknown; type?: unknown } | undefined;
  const message = e && e.message != null ? String(e.message) : String(err);
  // @clickhouse/client's ClickHouseError: code and type already parsed out of the message.
  if (e && typeof e.type === 'string' && /^[A-Z0-9_]+$/.test(e.type) && e.code !== undefined && /^\d+$/.test(String(e.code))) {
    return new AnalyticalQueryError(Number(e.code), e.type, message.trim(), err);
  }
  const m = /Code: (\d+)\.\s*(?:DB::Exception:\s*)?([\s\S]*?)\s*\(([A-Z0-9_]{3,})\)(?:\s*\(version [^)]*\))?\s*$/.exec(message.trim());
  if (m) return new AnalyticalQueryError(Number(m[1]), m[3], m[2].replace(/\.\s*$/, ''), err);
  // Not an engine answer: the request never got through (refused, reset, timed out).
  return new AnalyticalQueryError(0, 'CONNECTION_FAILED', message, err);
}
