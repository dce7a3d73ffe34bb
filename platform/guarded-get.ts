import https from 'node:https';
import net from 'node:net';
import type tls from 'node:tls';
import { extraCaContext } from './outbound-tls.ts';
import { hostOf, type OutboundUrlGuard, type OutboundUse } from './ports/outbound-url-guard.ts';

/**
 * One HTTPS exchange through the outbound guard, for the service's own calls to a provider's API: the URL's form is
 * checked before dialling and every resolved address inside the dial (no DNS rebinding), redirects are never followed
 * (guardedGet refuses them; guardedFetch answers them as they are), one deadline covers the whole exchange, and the
 * body is read up to `maxBytes` (past it: refused, the socket dropped).
 */
export class GuardedGetError extends Error {}

export interface GuardedRequestOptions {
  guard: OutboundUrlGuard;
  use: OutboundUse;
  timeoutMs: number;
  maxBytes: number;
  method?: string;
  headers?: Record<string, string>;
  /** A request body (JSON, a form). */
  body?: string;
  /** A 3xx answer fails the call instead of being answered. */
  refuseRedirects?: boolean;
  signal?: AbortSignal | null;
}

export interface GuardedAnswer {
  status: number;
  headers: NodeJS.Dict<string | string[]>;
  body: Buffer;
}

export function guardedRequest(raw: string, opts: GuardedRequestOptions): Promise<GuardedAnswer> {
  let url: URL;
  try {
    url = opts.guard.parseUrl(raw, opts.use);
  } catch (err) {
    return Promise.reject(new GuardedGetError(`refused: ${(err as Error).message}`));
  }
  if (url.protocol !== 'https:') return Promise.reject(new GuardedGetError(`refused: ${url.origin} is not https`));
  const host = hostOf(url);
  const headers = { ...opts.headers };
  if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
  return new Promise((resolve, reject) => {
    const fail = (message: string) => {
      clearTimeout(timer);
      request.destroy();
      reject(new GuardedGetError(message));
    };
    const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> = {
      method: opts.method ?? 'GET',
      host,
      port: url.port ? Number(url.port) : 443,
      path: url.pathname + url.search,
      headers,
      lookup: opts.guard.lookup(opts.use),
      servername: net.isIP(host) ? undefined : host,
      secureContext: extraCaContext(opts.guard.extraCa),
      agent: false,
    };
    const request = https.request(options, (res) => {
      const status = res.statusCode ?? 502;
      if (opts.refuseRedirects && status >= 300 && status < 400) return fail(`redirect (${status}) not followed`);
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > opts.maxBytes) return fail(`body of ${declared} bytes is over ${opts.maxBytes}`);
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > opts.maxBytes) return fail(`body is over ${opts.maxBytes} bytes`);
        chunks.push(c);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', (err) => fail(err.message));
    });
    const timer = setTimeout(() => fail(`timed out after ${opts.timeoutMs / 1000} s`), opts.timeoutMs);
    opts.signal?.addEventListener('abort', () => fail('aborted'), { once: true });
    request.on('error', (err) => fail(err.message));
    request.end(opts.body);
  });
}

/** One GET; a redirect is refused. */
export async function guardedGet(
  raw: string,
  opts: { guard: OutboundUrlGuard; use: OutboundUse; headers?: Record<string, string>; timeoutMs: number; maxBytes: number },
): Promise<{ status: number; body: Buffer }> {
  const { status, body } = await guardedRequest(raw, { ...opts, refuseRedirects: true });
  return { status, body };
}
