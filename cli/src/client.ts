import { type ApiClient, createApiClient } from '../../schemas/api/client.ts';
import type { ErrorBody } from '../../schemas/error-codes.ts';

/**
 * The CLI's one HTTP client: the typed client (schemas/api/client.ts) over fetch with the caller's token, for the
 * service's public `/v1` routes (the same the console calls) and sentry-cli's `/api/0/` upload routes.
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
  /**
   * The typed client over the route table (schemas/api/client.ts): every call the CLI makes, the `/v1` routes and
   * sentry-cli's `/api/0/...` upload routes (a FormData body goes as multipart).
   */
  api: ApiClient;
}

/**
 * A body sent as it is, streamed (`cx deploy --prebuilt`'s .tar.gz): its media type, its bytes as they come, and their
 * length when known.
 */
export class RawBody {
  constructor(
    readonly type: string,
    readonly bytes: AsyncIterable<Uint8Array>,
    readonly length?: number,
  ) {}
}

/** Names the program and the machine's kind: the console's device-login page shows it (where a login started). */
const USER_AGENT = `cx-cli/0.1 (${process.platform} ${process.arch}; node ${process.versions.node})`;

export function createClient(base: string, token: string | undefined): Client {
  const root = base.replace(/\/+$/, '');
  async function send(method: string, url: string, body: unknown): Promise<unknown> {
    const form = body instanceof FormData;
    const raw = body instanceof RawBody ? body : undefined;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          'user-agent': USER_AGENT,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined || form ? {} : { 'content-type': raw ? raw.type : 'application/json' }),
          ...(raw?.length !== undefined ? { 'content-length': String(raw.length) } : {}),
        },
        body: body === undefined ? undefined : form ? body : raw ? (raw.bytes as unknown as BodyInit) : JSON.stringify(body),
        // A streamed body goes out as it is read (Node's fetch needs half duplex for it); an upload may take minutes.
        ...(raw ? { duplex: 'half' } : {}),
        signal: AbortSignal.timeout(raw ? 30 * 60_000 : form ? 120_000 : 30_000),
      } as RequestInit);
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
    return json;
  }
  return {
    base: root,
    token,
    api: createApiClient((method, path, body) => send(method, `${root}${path}`, body)),
  };
}
