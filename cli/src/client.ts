import { type ApiClient, createApiClient } from '../../schemas/api/client.ts';
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
  /** The typed client over the route table (schemas/api/client.ts): every `/v1` call the CLI makes. */
  api: ApiClient;
  /** A route outside `/v1` (sentry-cli's `/api/0/...` upload routes): `path` from the root; a FormData body goes as multipart. */
  callRoot<T>(method: string, path: string, body?: unknown): Promise<T>;
}

/** Names the program and the machine's kind: the console's device-login page shows it (where a login started). */
const USER_AGENT = `cx-cli/0.1 (${process.platform} ${process.arch}; node ${process.versions.node})`;

export function createClient(base: string, token: string | undefined): Client {
  const root = base.replace(/\/+$/, '');
  async function send<T>(method: string, url: string, body: unknown): Promise<T> {
    const form = body instanceof FormData;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          'user-agent': USER_AGENT,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined || form ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : form ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(form ? 120_000 : 30_000),
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
  }
  return {
    base: root,
    token,
    api: createApiClient((method, path, body) => send(method, `${root}${path}`, body)),
    callRoot: <T>(method: string, path: string, body?: unknown) => send<T>(method, `${root}${path}`, body),
  };
}
