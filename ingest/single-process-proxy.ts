import type uWS from 'uWebSockets.js';
import type { Logger } from '../platform/logger.ts';
import { clientIp, immediateReply, type ReadBody, readBody, send, sendError, sendFile, watchedReply, type Headers } from './http/uws-reply.ts';
import type { SiteServer } from '../hosting/serve/site-server.ts';
import type { Forwarder, ForwardResponse } from './forward.ts';
import { LIMITS } from '../schemas/limits.ts';

/** Largest body relayed to the API in single-process mode. */
const FORWARD_MAX_BODY_BYTES = 1024 * 1024;
/** A larger body is read to its end and thrown away before the 413 (LIMITS.oversizeBody), so its client reads the 413. */
const OVERSIZE_DRAIN = { bytes: LIMITS.oversizeBody.drainBytes, ms: LIMITS.oversizeBody.drainMs };
const NO_BODY: Promise<ReadBody> = Promise.resolve({ body: Buffer.alloc(0) });

/**
 * Single-process mode: every request the edge does not serve itself is relayed to the API in the same
 * process (forward.ts), so one port answers every /v1 route; a request to a site host (`sites`) is answered
 * here from the site's files, without the relay. Without a forwarder (the distributed edge) anything else is
 * 404: the reverse proxy routes the API's paths and site hosts elsewhere.
 */
export function registerSingleProcessProxy(app: uWS.TemplatedApp, opts: { forward?: Forwarder; sites?: SiteServer; trustProxy: boolean; log: Logger }): void {
  app.any('/*', (res, req) => {
    if (!opts.forward) return sendError(res, immediateReply(req), 'not_found', 'no such route');
    const st = watchedReply(res, req);
    const forward = opts.forward;
    const method = req.getCaseSensitiveMethod();
    const query = req.getQuery();
    const url = query ? `${req.getUrl()}?${query}` : req.getUrl();
    const headers: Record<string, string> = {};
    req.forEach((k, v) => {
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
    });
    // Who asks, read from the socket only when something needs it (a cached site's GET never does).
    const forwardedFor = opts.trustProxy ? (headers['x-forwarded-for'] ?? '') : '';
    let ip: string | undefined;
    const remoteAddress = () => (ip ??= st.aborted || st.done ? '' : clientIp(res, forwardedFor, opts.trustProxy));
    const tooLarge = () => sendError(res, st, 'payload_too_large', `body exceeds ${FORWARD_MAX_BODY_BYTES} bytes`, [], { close: true });
    if (headers['content-length'] && Number(headers['content-length']) > FORWARD_MAX_BODY_BYTES + OVERSIZE_DRAIN.bytes) return tooLarge();
    // A GET or HEAD that announces no body has none to read (most requests to a site).
    const bodyless = (method === 'GET' || method === 'HEAD') && !headers['content-length'] && !headers['transfer-encoding'];
    const bodyP = bodyless ? NO_BODY : readBody(res, st, FORWARD_MAX_BODY_BYTES, tooLarge, 0, OVERSIZE_DRAIN);
    void (async () => {
      const read = await bodyP;
      if (read === null || st.done || st.aborted) return;
      const host = headers.host;
      if (opts.sites && host) {
        try {
          const found = await opts.sites.lookup(host, remoteAddress);
          // A custom domain of a status page (found.statusSlug) is the API's to answer: relayed below.
          if (found !== undefined && !found.statusSlug) {
            const site = await opts.sites.serve(found.dir, method, url, found, headers, { body: read.body, clientIp: remoteAddress });
            if ('file' in site) return sendFile(res, st, site.status, site.headers, site.file, site.size, site.start);
            // A 304 has no body, not even an empty one's length.
            return send(res, st, site.status, site.headers, site.status === 304 ? undefined : site.body);
          }
        } catch (err) {
          opts.log.error({ err }, 'serving a site failed');
          return sendError(res, st, 'internal', 'internal error');
        }
      }
      let out: ForwardResponse;
      try {
        out = await forward({ method, url, headers, body: read.body, remoteAddress: remoteAddress() });
      } catch (err) {
        opts.log.error({ err }, 'forwarded request failed');
        return sendError(res, st, 'internal', 'internal error');
      }
      const h: Headers = [];
      for (const [k, v] of Object.entries(out.headers)) {
        if (v === undefined) continue;
        const lk = k.toLowerCase();
        // uWS frames the response itself (and writes its own Date).
        if (lk === 'content-length' || lk === 'transfer-encoding' || lk === 'connection' || lk === 'keep-alive' || lk === 'date') continue;
        if (Array.isArray(v)) for (const one of v) h.push([k, one]);
        else h.push([k, String(v)]);
      }
      send(res, st, out.status, h, out.body);
    })().catch((err) => {
      opts.log.error({ err }, 'relaying a request failed');
      sendError(res, st, 'internal', 'internal error');
    });
  });
}
