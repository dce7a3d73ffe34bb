import http from 'node:http';
import https from 'node:https';
import type tls from 'node:tls';
import { hostOf, OutboundUrlError, type OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';
import net from 'node:net';
import { extraCaContext } from '../../platform/outbound-tls.ts';

/**
 * One HTTPS POST of a signed delivery (spec §6.3, §9). What makes it safe to point at a
 * customer-chosen URL:
 * - the SSRF guard runs again here: literal IPs before dialling, names inside the socket's own DNS
 *   lookup on every resolved address (DNS rebinding cannot slip a private address in);
 * - redirects are never followed (a 3xx is a failure);
 * - one deadline for the whole attempt (connect, TLS, headers): LIMITS.webhook.attemptTimeoutMs;
 * - the response body is never read: the socket is destroyed as soon as the status line arrives.
 * Success is a 2xx.
 */
export interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface SendResult {
  ok: boolean;
  status?: number;
  retryAfter?: string;
  error?: string;
}

export interface SenderOptions {
  timeoutMs: number;
  /** The outbound guard: the URL's form before dialling, every resolved address inside the dial. */
  guard: OutboundUrlGuard;
}

export function sendWebhook(req: SendRequest, opts: SenderOptions): Promise<SendResult> {
  let url: URL;
  try {
    url = opts.guard.parseUrl(req.url, 'webhook');
  } catch (err) {
    return Promise.resolve({ ok: false, error: `refused: ${(err as Error).message}` });
  }
  const host = hostOf(url);
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const done = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> = {
      method: 'POST',
      host,
      port: url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443,
      path: url.pathname + url.search,
      headers: { ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) },
      lookup: opts.guard.lookup('webhook'),
      servername: net.isIP(host) ? undefined : host,
      secureContext: extraCaContext(opts.guard.extraCa),
      agent: false,
    };
    // http:// only gets here when the guard allowed it (ALLOW_LOCAL_WEBHOOKS).
    const request = (url.protocol === 'http:' ? http : https).request(options, (res) => {
      const status = res.statusCode ?? 0;
      const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
      // Only the status is used: drop the body unread, and the connection with it.
      res.destroy();
      request.destroy();
      if (status >= 200 && status < 300) return done({ ok: true, status });
      if (status >= 300 && status < 400) return done({ ok: false, status, error: `redirect (${status}) not followed` });
      done({ ok: false, status, retryAfter, error: `endpoint answered HTTP ${status}` });
    });
    const timer = setTimeout(() => {
      done({ ok: false, error: `timed out after ${opts.timeoutMs / 1000} s` });
      request.destroy();
    }, opts.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof OutboundUrlError || String(err.code).startsWith('url_')) return done({ ok: false, error: `refused: ${err.message}` });
      done({ ok: false, error: describeNetworkError(err) });
    });
    request.end(req.body);
  });
}

function describeNetworkError(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host did not resolve (${err.code})`;
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'CERT_HAS_EXPIRED':
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `TLS certificate not accepted (${err.code})`;
    default:
      return err.code ? `${err.code}: ${err.message}` : err.message;
  }
}
