/**
 * The one error both analytical adapters throw, so callers see the same thing from chDB and from a
 * ClickHouse server: the engine's code and type, and whether retrying the same call can help.
 */
const TRANSIENT_TYPES = new Set([
  'TIMEOUT_EXCEEDED',
  'TOO_MANY_SIMULTANEOUS_QUERIES',
  'SOCKET_TIMEOUT',
  'NETWORK_ERROR',
  'TOO_MANY_PARTS',
  'TABLE_IS_READ_ONLY',
  'ALL_CONNECTION_TRIES_FAILED',
  'KEEPER_EXCEPTION',
  'MEMORY_LIMIT_EXCEEDED',
  'UNKNOWN_EXCEPTION',
]);

export class AnalyticalQueryError extends Error {
  override readonly name = 'AnalyticalQueryError';
  /** ClickHouse error code (0 when the engine was not reached). */
  readonly code: number;
  /** ClickHouse error type, e.g. SYNTAX_ERROR, UNKNOWN_TABLE; CONNECTION_FAILED when not reached. */
  readonly type: string;
  /** True when the same call may succeed later (timeouts, overload, connection failures). */
  readonly retryable: boolean;

  constructor(code: number, type: string, detail: string, cause?: unknown) {
    super(`${type} (code ${code}): ${detail}`, { cause });
    this.code = code;
    this.type = type;
    this.retryable = type === 'CONNECTION_FAILED' || TRANSIENT_TYPES.has(type);
  }
}

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
