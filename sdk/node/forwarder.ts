import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The same-origin path for apps hosted elsewhere (§7.1): cx.js in the page posts to `/service/v1/errors/i` on the
 * page's own origin, and this handler, in the app's own server, relays the batch to the service's edge with the
 * ingest key attached (read from SERVICE_INGEST_KEY), so no key is in the page. It passes the browser's Origin (the
 * §7.3 origin rule still applies) and IP (`x-service-client-ip`, so the per key-and-IP limit counts browsers, not
 * this server), and relays status, body and Retry-After.
 *
 *   const forward = createErrorForwarder();          // SERVICE_INGEST_KEY, SERVICE_BASE_URL
 *   // fetch-style servers (Next.js route handlers, Hono, Bun, Deno):
 *   export const POST = (request: Request) => forward.handle(request);
 *   // node:http, Express, Connect: answers the path, passes anything else on
 *   app.use(forward.middleware);
 *   // Fastify
 *   app.register(forward.fastify);
 *
 * No dependencies: Node 18+'s fetch.
 */
export const SAME_ORIGIN_ERRORS_PATH = '/service/v1/errors/i';
const MAX_BODY_BYTES = 64 * 1024;
const CLIENT_IP_HEADER = 'x-service-client-ip';
const RELAYED_HEADERS = ['content-type', 'retry-after'];

export interface ForwarderOptions {
  ingestKey?: string;
  /** The service's base URL, e.g. `https://service.example.com`. */
  baseUrl?: string;
  /**
   * Take the browser's IP from the right-most `X-Forwarded-For` entry (this app is behind a proxy that appends
   * it). Otherwise the socket's address.
   */
  trustProxy?: boolean;
  fetch?: typeof fetch;
}

export interface ForwardedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface ErrorForwarder {
  /** fetch-style handler for the same-origin path. `clientIp`: the browser's address, when the framework knows it. */
  handle(request: Request, clientIp?: string): Promise<Response>;
  /** node:http / Express / Connect middleware: answers POST (and OPTIONS) on the same-origin path, else calls `next`. */
  middleware(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void;
  /** A Fastify plugin registering the route (with a raw body parser of its own, encapsulated). */
  fastify(app: FastifyLike, _opts: unknown, done?: (err?: Error) => void): void;
  /** The relay itself, for other servers. */
  forward(input: { body: Uint8Array; contentType: string; origin?: string; clientIp?: string; userAgent?: string }): Promise<ForwardedAnswer>;
}

/** The part of a Fastify instance the plugin uses (so the SDK needs no Fastify import). */
export interface FastifyLike {
  addContentTypeParser(type: string, opts: { parseAs: 'buffer'; bodyLimit: number }, parser: (req: unknown, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => void): void;
  post(path: string, handler: (request: { body: unknown; headers: Record<string, string | string[] | undefined>; ip: string }, reply: { code(n: number): { headers(h: Record<string, string>): { send(body: string): unknown } } }) => unknown): void;
}

const json = (status: number, error: string, message: string, extra: Record<string, string> = {}): ForwardedAnswer => ({
  status,
  headers: { 'content-type': 'application/json', ...extra },
  body: JSON.stringify({ error, message }),
});

function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

export function createErrorForwarder(options: ForwarderOptions = {}): ErrorForwarder {
  const ingestKey = options.ingestKey ?? process.env.SERVICE_INGEST_KEY ?? '';
  const target = `${(options.baseUrl ?? process.env.SERVICE_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '')}/v1/errors/i`;
  const doFetch = options.fetch ?? globalThis.fetch;

  async function forward(input: Parameters<ErrorForwarder['forward']>[0]): Promise<ForwardedAnswer> {
    if (!ingestKey) return json(500, 'internal', 'the error forwarder has no ingest key (set SERVICE_INGEST_KEY)');
    if (input.body.byteLength > MAX_BODY_BYTES) return json(413, 'payload_too_large', `body exceeds ${MAX_BODY_BYTES} bytes`);
    const headers: Record<string, string> = { authorization: `Bearer ${ingestKey}`, 'content-type': input.contentType };
    if (input.origin) headers.origin = input.origin;
    if (input.clientIp) headers[CLIENT_IP_HEADER] = input.clientIp;
    if (input.userAgent) headers['user-agent'] = input.userAgent;
    try {
      const res = await doFetch(target, { method: 'POST', headers, body: input.body as unknown as BodyInit, signal: AbortSignal.timeout(10_000) });
      const out: ForwardedAnswer = { status: res.status, headers: {}, body: await res.text() };
      for (const h of RELAYED_HEADERS) {
        const v = res.headers.get(h);
        if (v !== null) out.headers[h] = v;
      }
      return out;
    } catch {
      return json(503, 'unavailable', 'the error service cannot be reached; retry later', { 'retry-after': '5' });
    }
  }

  function ipOf(socketAddress: string | undefined, forwardedFor: string | undefined): string | undefined {
    if (options.trustProxy && forwardedFor) {
      const last = forwardedFor.split(',').pop()!.trim();
      if (last) return last;
    }
    return socketAddress;
  }

  async function readNodeBody(req: IncomingMessage): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) return null;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  function write(res: ServerResponse, a: ForwardedAnswer): void {
    if (res.headersSent) return;
    res.writeHead(a.status, a.headers);
    res.end(a.body);
  }

  return {
    forward,

    async handle(request, clientIp) {
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: { allow: 'POST, OPTIONS' } });
      if (request.method !== 'POST') {
        const a = json(405, 'method_not_allowed', 'use POST', { allow: 'POST, OPTIONS' });
        return new Response(a.body, { status: a.status, headers: a.headers });
      }
      const body = new Uint8Array(await request.arrayBuffer());
      const ip = clientIp ?? ipOf(undefined, request.headers.get('x-forwarded-for') ?? undefined);
      const a = await forward({ body, contentType: request.headers.get('content-type') ?? '', origin: request.headers.get('origin') ?? undefined, clientIp: ip, userAgent: request.headers.get('user-agent') ?? undefined });
      return new Response(a.body, { status: a.status, headers: a.headers });
    },

    middleware(req, res, next) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== SAME_ORIGIN_ERRORS_PATH) return next ? next() : write(res, json(404, 'not_found', 'no such route'));
      if (req.method === 'OPTIONS') return write(res, { status: 204, headers: { allow: 'POST, OPTIONS' }, body: '' });
      if (req.method !== 'POST') return write(res, json(405, 'method_not_allowed', 'use POST', { allow: 'POST, OPTIONS' }));
      readNodeBody(req)
        .then(async (body) => {
          if (body === null) {
            write(res, json(413, 'payload_too_large', `body exceeds ${MAX_BODY_BYTES} bytes`, { connection: 'close' }));
            req.destroy();
            return;
          }
          const h = req.headers;
          write(res, await forward({ body, contentType: firstHeader(h['content-type']) ?? '', origin: firstHeader(h.origin), clientIp: ipOf(req.socket.remoteAddress, firstHeader(h['x-forwarded-for'])), userAgent: firstHeader(h['user-agent']) }));
        })
        .catch(() => write(res, json(400, 'invalid_request', 'the request body could not be read')));
    },

    fastify(app, _opts, done) {
      app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_req, body, cb) => cb(null, body));
      app.post(SAME_ORIGIN_ERRORS_PATH, async (request, reply) => {
        const h = request.headers;
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.from(typeof request.body === 'string' ? request.body : JSON.stringify(request.body ?? ''));
        const a = await forward({ body, contentType: firstHeader(h['content-type']) ?? '', origin: firstHeader(h.origin), clientIp: request.ip, userAgent: firstHeader(h['user-agent']) });
        return reply.code(a.status).headers(a.headers).send(a.body);
      });
      done?.();
    },
  };
}
