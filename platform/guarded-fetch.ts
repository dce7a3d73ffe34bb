import { guardedRequest } from './guarded-get.ts';
import type { OutboundUrlGuard, OutboundUse } from './ports/outbound-url-guard.ts';

/**
 * A `fetch` for a provider's client library (@octokit/request takes one): every call is one guardedRequest (https
 * only, the URL's form checked before dialling, every resolved address checked inside the dial, redirects answered as
 * they are and never followed, one deadline, the answer's body read up to `maxBytes`). Request bodies are strings.
 */
export function guardedFetch(opts: { guard: OutboundUrlGuard; use: OutboundUse; timeoutMs: number; maxBytes: number }): typeof fetch {
  return async (input, init = {}) => {
    const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = init.body == null ? undefined : typeof init.body === 'string' ? init.body : undefined;
    if (init.body != null && body === undefined) throw new Error('guardedFetch sends string bodies only');
    const answer = await guardedRequest(raw, { ...opts, method: init.method ?? 'GET', headers, body, signal: init.signal });
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) answerHeaders.append(name, v);
    }
    const nullBody = answer.status === 204 || answer.status === 304 || (answer.status >= 100 && answer.status < 200);
    return new Response(nullBody ? null : new Uint8Array(answer.body), { status: answer.status, headers: answerHeaders });
  };
}
