import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { hostOf, OutboundUrlError, type OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';
import { extraCaContext } from '../../platform/outbound-tls.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { CheckError } from '../../schemas/uptime.ts';

/**
 * One uptime check: an HTTPS request to a tenant's URL, safe the way webhook sends are (plain HTTP only where the guard
 * takes http://: ALLOW_LOCAL_OUTBOUND, a developer's machine). The guard checks the URL's form,
 * and every address inside the dial (a name that rebinds to a private address is refused). Redirects are not followed:
 * a 3xx is judged by the expected range. One deadline covers the whole check. At most LIMITS.uptime.bodyReadBytes of
 * the body is read, and only when a text is expected. Connections are kept alive per host and reused by the next
 * check (`createCheckAgent`).
 * The result says how it went, or why it failed (schemas/uptime.ts CHECK_ERRORS).
 */
export interface CheckTarget {
  url: string;
  method: 'GET' | 'HEAD';
  timeoutMs: number;
  expectedMin: number;
  expectedMax: number;
  bodyContains: string | null;
}

export interface CheckResult {
  ok: boolean;
  status: number | null;
  ms: number;
  error: CheckError | null;
  detail: string | null;
}

export interface CheckAgent {
  agent: https.Agent;
  /** For the http:// URLs the guard takes on a developer's machine (ALLOW_LOCAL_OUTBOUND). */
  plain: http.Agent;
  /** Shared (platform/outbound-tls.ts): a context per request would cost more CPU than the check itself. */
  secureContext?: tls.SecureContext;
}

export function createCheckAgent(guard: OutboundUrlGuard): CheckAgent {
  return {
    agent: new https.Agent({ keepAlive: true, maxSockets: 4, maxFreeSockets: 2, timeout: 60_000 }),
    plain: new http.Agent({ keepAlive: true, maxSockets: 4, maxFreeSockets: 2, timeout: 60_000 }),
    secureContext: extraCaContext(guard.extraCa),
  };
}

const TLS_CODES = /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|ERR_OSSL)/;

function classify(err: NodeJS.ErrnoException): { error: CheckError; detail: string } {
  if (err instanceof OutboundUrlError || String(err.code).startsWith('url_')) return { error: 'dns', detail: `refused: ${err.message}` };
  const code = String(err.code ?? '');
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return { error: 'dns', detail: `${code}: the name did not resolve` };
  if (TLS_CODES.test(code) || /certificate|ssl|tls/i.test(err.message)) return { error: 'tls', detail: code || err.message };
  return { error: 'connect', detail: code || err.message };
}

export function runCheck(target: CheckTarget, deps: { guard: OutboundUrlGuard; agent: CheckAgent }): Promise<CheckResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    // http:// gets past the guard only where it takes it (ALLOW_LOCAL_OUTBOUND); anything else is refused there.
    url = deps.guard.parseUrl(target.url, 'uptime');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundUrlError('url_not_https', 'url must use https');
  } catch (err) {
    return Promise.resolve({ ok: false, status: null, ms: 0, error: 'dns', detail: `refused: ${(err as Error).message}` });
  }
  const host = hostOf(url);
  return new Promise<CheckResult>((resolve) => {
    let settled = false;
    const done = (r: Omit<CheckResult, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...r, ms: elapsed() });
    };
    const common = {
      method: target.method,
      host,
      path: url.pathname + url.search,
      headers: { 'user-agent': 'Service-Uptime/1.0', accept: '*/*' },
      lookup: deps.guard.lookup('uptime'),
    };
    const onResponse = (res: http.IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status < target.expectedMin || status > target.expectedMax) {
        res.resume();
        return done({ ok: false, status, error: 'status', detail: `HTTP ${status}, expected ${target.expectedMin}-${target.expectedMax}` });
      }
      const wanted = target.bodyContains;
      if (!wanted || target.method === 'HEAD') {
        res.resume(); // read to the end, so the connection can serve the next check
        return done({ ok: true, status, error: null, detail: null });
      }
      // Look for the text in the first bodyReadBytes; a match ends the read there.
      let seen = '';
      let bytes = 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += Buffer.byteLength(chunk);
        seen = (seen + chunk).slice(-(LIMITS.uptime.bodyReadBytes + wanted.length));
        if (seen.includes(wanted)) {
          done({ ok: true, status, error: null, detail: null });
          res.destroy();
        } else if (bytes >= LIMITS.uptime.bodyReadBytes) {
          done({ ok: false, status, error: 'body', detail: `"${wanted}" not in the first ${LIMITS.uptime.bodyReadBytes} bytes` });
          res.destroy();
        }
      });
      res.on('end', () => done({ ok: false, status, error: 'body', detail: `"${wanted}" not in the body` }));
      res.on('error', (err: NodeJS.ErrnoException) => done({ ok: false, status, ...classify(err) }));
    };
    const request =
      url.protocol === 'http:'
        ? http.request({ ...common, port: url.port ? Number(url.port) : 80, agent: deps.agent.plain }, onResponse)
        : https.request(
            {
              ...common,
              port: url.port ? Number(url.port) : 443,
              servername: net.isIP(host) ? undefined : host,
              agent: deps.agent.agent,
              ...(deps.agent.secureContext ? { secureContext: deps.agent.secureContext } : {}),
            },
            onResponse,
          );
    const timer = setTimeout(() => {
      done({ ok: false, status: null, error: 'timeout', detail: `no answer within ${target.timeoutMs / 1000} s` });
      request.destroy();
    }, target.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => done({ ok: false, status: null, ...classify(err) }));
    request.end();
  });
}
