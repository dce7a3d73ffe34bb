import https from 'node:https';
import net from 'node:net';
import type tls from 'node:tls';
import { extraCaContext } from './outbound-tls.ts';
import { hostOf, type OutboundUrlGuard, type OutboundUse } from './ports/outbound-url-guard.ts';

/**
 * A `fetch` for a provider's client library (@octokit/request takes one): every call goes through the outbound guard
 * as guardedGet's do (https only, the URL's form checked before dialling, every resolved address checked inside the
 * dial, redirects answered as they are and never followed), one deadline for the whole exchange, and the answer's body
 * read up to `maxBytes` (past it: the call fails and the socket is dropped). Request bodies are strings (JSON, forms).
 */
export function guardedFetch(opts: { guard: OutboundUrlGuard; use: OutboundUse; timeoutMs: number; maxBytes: number }): typeof fetch {
  return async (input, init = {}) => {
    const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const url = opts.guard.parseUrl(raw, opts.use);
    if (url.protocol !== 'https:') throw new Error(`refused: ${url.origin} is not https`);
    const host = hostOf(url);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = init.body == null ? undefined : typeof init.body === 'string' ? init.body : undefined;
    if (init.body != null && body === undefined) throw new Error('guardedFetch sends string bodies only');
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const fail = (message: string) => {
        clearTimeout(timer);
        request.destroy();
        reject(new Error(message));
      };
      const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> = {
        method: init.method ?? 'GET',
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
          const status = res.statusCode ?? 502;
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const v of Array.isArray(value) ? value : [value]) answerHeaders.append(name, v);
          }
          const nullBody = status === 204 || status === 304 || (status >= 100 && status < 200);
          resolve(new Response(nullBody ? null : Buffer.concat(chunks), { status, headers: answerHeaders }));
        });
        res.on('error', (err) => fail(err.message));
      });
      const timer = setTimeout(() => fail(`timed out after ${opts.timeoutMs / 1000} s`), opts.timeoutMs);
      init.signal?.addEventListener('abort', () => fail('aborted'), { once: true });
      request.on('error', (err) => fail(err.message));
      request.end(body);
    });
  };
}
