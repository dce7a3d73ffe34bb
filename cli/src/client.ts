import type { ErrorBody } from '../../schemas/error-codes.ts';

/**
 * The CLI's one HTTP client: the service's public `/v1` routes, the same the console calls, with the caller's token.
 * A refusal becomes an ApiError carrying the API's own error code and message; the exit code follows from it.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSec?: number,
  ) {
    super(message);
  }
}

export interface Client {
  base: string;
  token: string | undefined;
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
}

export function createClient(base: string, token: string | undefined): Client {
  const root = base.replace(/\/+$/, '');
  return {
    base: root,
    token,
    async call<T>(method: string, path: string, body?: unknown): Promise<T> {
      let res: Response;
      try {
        res = await fetch(`${root}/v1${path}`, {
          method,
          headers: {
            accept: 'application/json',
            'user-agent': 'cx-cli/0.1',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (err) {
        throw new ApiError(0, 'unreachable', `cannot reach ${root}: ${(err as Error).message}`);
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      if (!res.ok) {
        const e = (json ?? {}) as Partial<ErrorBody>;
        const retry = Number(res.headers.get('retry-after'));
        throw new ApiError(
          res.status,
          e.error ?? `http_${res.status}`,
          e.message ?? `HTTP ${res.status}`,
          Number.isFinite(retry) && retry > 0 ? retry : undefined,
        );
      }
      return json as T;
    },
  };
}
