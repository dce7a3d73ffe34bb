import http from 'node:http';
import https from 'node:https';
import type tls from 'node:tls';
import { hostOf, OutboundUrlError, type OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';
import net from 'node:net';
import { extraCaContext } from '../../platform/outbound-tls.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * One HTTPS POST of a signed delivery (spec §6.3, §9). What makes it safe to point at a
 * customer-chosen URL:
 * - the SSRF guard runs again here: literal IPs before dialling, names inside the socket's own DNS
 *   lookup on every resolved address of every new connection (DNS rebinding cannot slip a private address in);
 * - redirects are never followed (a 3xx is a failure);
 * - one deadline for the whole attempt (connect, TLS, headers, the answer's body): LIMITS.webhook.attemptTimeoutMs;
 * - the answer's body is read and thrown away, at most LIMITS.webhook.answerReadBytes of it: past that, or past the
 *   deadline, the connection is dropped.
 * Connections are kept alive and reused per receiver origin (`createWebhookAgents`: a receiver answering many
 * deliveries pays one TLS handshake, not one each), at most LIMITS.webhook.perReceiverConnections per origin.
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
  /** Kept-alive connections (createWebhookAgents); without them each send opens and drops its own. */
  agents?: WebhookAgents;
}

/** The dispatcher's kept-alive connections, per receiver origin; `destroy` closes them (on stop). */
export interface WebhookAgents {
  https: https.Agent;
  http: http.Agent;
  destroy(): void;
}

export function createWebhookAgents(): WebhookAgents {
  const options = {
    keepAlive: true,
    maxSockets: LIMITS.webhook.perReceiverConnections,
    maxFreeSockets: LIMITS.webhook.perReceiverConnections,
    // An idle connection is closed after this; the receiver's own keep-alive timeout is often shorter.
    timeout: LIMITS.webhook.idleConnectionMs,
    scheduling: 'lifo' as const,
  };
  const agents = { https: new https.Agent(options), http: new http.Agent(options) };
  return { ...agents, destroy: () => (agents.https.destroy(), agents.http.destroy()) };
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
    const secure = url.protocol !== 'http:';
    const options: https.RequestOptions & Pick<tls.ConnectionOptions, 'secureContext'> = {
      method: 'POST',
      host,
      port: url.port ? Number(url.port) : secure ? 443 : 80,
      path: url.pathname + url.search,
      headers: { ...req.headers, 'Content-Length': String(Buffer.byteLength(req.body)) },
      lookup: opts.guard.lookup('webhook'),
      servername: net.isIP(host) ? undefined : host,
      secureContext: extraCaContext(opts.guard.extraCa),
      agent: opts.agents ? (secure ? opts.agents.https : opts.agents.http) : false,
    };
    // http:// only gets here when the guard allowed it (ALLOW_LOCAL_OUTBOUND).
    const request = (secure ? https : http).request(options, (res) => {
      const status = res.statusCode ?? 0;
      const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : undefined;
      const result: SendResult =
        status >= 200 && status < 300
          ? { ok: true, status }
          : status >= 300 && status < 400
            ? { ok: false, status, error: `redirect (${status}) not followed` }
            : { ok: false, status, retryAfter, error: `endpoint answered HTTP ${status}` };
      // Only the status is used. The body is read and dropped, so the connection can carry the next delivery;
      // a long one is not worth its bytes: past the cap the connection goes with it.
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > LIMITS.webhook.answerReadBytes) {
          request.destroy();
          done(result);
        }
      });
      res.on('end', () => done(result));
      res.on('error', () => done(result));
      res.on('aborted', () => done(result));
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
