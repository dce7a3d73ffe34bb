import type { IncomingMessage, ServerResponse } from 'node:http';
import { WIRE_LIMITS, WIRE_PATHS } from './wire.ts';

/**
 * The same-origin paths for apps hosted elsewhere (§7.1): cx.js in the page calls `/service/v1/errors/i`,
 * `/service/v1/analytics/i`, `/service/v1/flags/i` and (with sessions on) `/service/v1/sessions/i` on the page's own origin, and this handler, in the app's own
 * server, relays each to the service's edge with the ingest key attached (read from SERVICE_INGEST_KEY), so no key is
 * in the page. It passes the browser's Origin (the origin rule still applies) and IP (`x-service-client-ip`, so the
 * per key-and-IP limit counts browsers, not this server), and relays status, body, Retry-After and (flags) ETag.
 *
 *   const forward = createForwarder();               // SERVICE_INGEST_KEY, SERVICE_BASE_URL
 *   // fetch-style servers (Next.js route handlers under app/service/v1/[...path], Hono, Bun, Deno):
 *   export const POST = (request: Request) => forward.handle(request);
 *   export const GET = POST;
 *   // node:http, Express, Connect: answers the three paths, passes anything else on
 *   app.use(forward.middleware);
 *   // Fastify
 *   app.register(forward.fastify);
 *
 * No dependencies: Node 18+'s fetch.
 */
export const SAME_ORIGIN_ERRORS_PATH = WIRE_PATHS.siteErrors;
export const SAME_ORIGIN_ANALYTICS_PATH = WIRE_PATHS.siteAnalytics;
export const SAME_ORIGIN_FLAGS_PATH = WIRE_PATHS.siteFlags;
export const SAME_ORIGIN_SESSIONS_PATH = WIRE_PATHS.siteSessions;

interface SameOriginRoute {
  target: string;
  method: 'POST' | 'GET';
  maxBodyBytes: number;
}
/** Each same-origin path, where the edge answers it, and the body it may carry (the edge's own limits). */
const ROUTES: Record<string, SameOriginRoute> = {
  [SAME_ORIGIN_ERRORS_PATH]: { target: WIRE_PATHS.errors, method: 'POST', maxBodyBytes: WIRE_LIMITS.errorBatch.maxBodyBytes },
  [SAME_ORIGIN_ANALYTICS_PATH]: { target: WIRE_PATHS.analytics, method: 'POST', maxBodyBytes: WIRE_LIMITS.analyticsBatch.maxBodyBytes },
  [SAME_ORIGIN_FLAGS_PATH]: { target: WIRE_PATHS.flags, method: 'GET', maxBodyBytes: 0 },
  [SAME_ORIGIN_SESSIONS_PATH]: { target: WIRE_PATHS.sessions, method: 'POST', maxBodyBytes: WIRE_LIMITS.sessionsBatch.maxBodyBytes },
};
const MAX_BODY_BYTES = Math.max(...Object.values(ROUTES).map((r) => r.maxBodyBytes));
const CLIENT_IP_HEADER = 'x-service-client-ip';
const RELAYED_HEADERS = ['content-type', 'retry-after', 'etag', 'cache-control'];

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
  /** fetch-style handler for the same-origin paths. `clientIp`: the browser's address, when the framework knows it. */
  handle(request: Request, clientIp?: string): Promise<Response>;
  /** node:http / Express / Connect middleware: answers the three same-origin paths, else calls `next`. */
  middleware(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): void;
  /** A Fastify plugin registering the routes (with a raw body parser of its own, encapsulated). */
  fastify(app: FastifyLike, _opts: unknown, done?: (err?: Error) => void): void;
  /** The relay itself, for other servers. `path`: the same-origin path (default: errors). */
  forward(input: ForwardInput): Promise<ForwardedAnswer>;
}

export interface ForwardInput {
  path?: string;
  /** The query string of a flags request (`distinctId=...`), without `?`. */
  query?: string;
  body?: Uint8Array;
  contentType?: string;
  origin?: string;
  clientIp?: string;
  userAgent?: string;
  ifNoneMatch?: string;
}

/** The part of a Fastify instance the plugin uses (so the SDK needs no Fastify import). */
export interface FastifyLike {
  addContentTypeParser(
    type: string,
    opts: { parseAs: 'buffer'; bodyLimit: number },
    parser: (req: unknown, body: Buffer, done: (err: Error | null, body?: Buffer) => void) => void,
  ): void;
  post(path: string, handler: FastifyLikeHandler): void;
  get(path: string, handler: FastifyLikeHandler): void;
}
type FastifyLikeHandler = (
  request: { body: unknown; headers: Record<string, string | string[] | undefined>; ip: string; url: string },
  reply: { code(n: number): { headers(h: Record<string, string>): { send(body: string): unknown } } },
) => unknown;

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
  const base = (options.baseUrl ?? process.env.SERVICE_BASE_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;

  async function forward(input: ForwardInput): Promise<ForwardedAnswer> {
    const route = ROUTES[input.path ?? SAME_ORIGIN_ERRORS_PATH];
    if (!route) return json(404, 'not_found', 'no such route');
    if (!ingestKey) return json(500, 'internal', 'the forwarder has no ingest key (set SERVICE_INGEST_KEY)');
    const body = route.method === 'POST' ? (input.body ?? new Uint8Array()) : undefined;
    if (body && body.byteLength > route.maxBodyBytes) return json(413, 'payload_too_large', `body exceeds ${route.maxBodyBytes} bytes`);
    const headers: Record<string, string> = { authorization: `Bearer ${ingestKey}` };
    if (body) headers['content-type'] = input.contentType ?? '';
    if (input.origin) headers.origin = input.origin;
    if (input.clientIp) headers[CLIENT_IP_HEADER] = input.clientIp;
    if (input.userAgent) headers['user-agent'] = input.userAgent;
    if (input.ifNoneMatch) headers['if-none-match'] = input.ifNoneMatch;
    const url = `${base}${route.target}${route.method === 'GET' && input.query ? `?${input.query}` : ''}`;
    try {
      const res = await doFetch(url, { method: route.method, headers, body: body as unknown as BodyInit | undefined, signal: AbortSignal.timeout(10_000) });
      const out: ForwardedAnswer = { status: res.status, headers: {}, body: await res.text() };
      for (const h of RELAYED_HEADERS) {
        const v = res.headers.get(h);
        if (v !== null) out.headers[h] = v;
      }
      return out;
    } catch {
      return json(503, 'unavailable', 'the service cannot be reached; retry later', { 'retry-after': '5' });
    }
  }

  function ipOf(socketAddress: string | undefined, forwardedFor: string | undefined): string | undefined {
    if (options.trustProxy && forwardedFor) {
      const last = forwardedFor.split(',').pop()!.trim();
      if (last) return last;
    }
    return socketAddress;
  }

  async function readNodeBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > max) return null;
      chunks.push(chunk as Buffer);
    }
    return Buffer.concat(chunks);
  }

  function write(res: ServerResponse, a: ForwardedAnswer): void {
    if (res.headersSent) return;
    res.writeHead(a.status, a.headers);
    res.end(a.body);
  }

  /** 405 for a method the path does not take; undefined when it may go on. */
  function methodRefusal(route: SameOriginRoute, method: string | undefined): ForwardedAnswer | undefined {
    const allow = `${route.method}, OPTIONS`;
    if (method === 'OPTIONS') return { status: 204, headers: { allow }, body: '' };
    if (method !== route.method) return json(405, 'method_not_allowed', `use ${route.method}`, { allow });
    return undefined;
  }

  const splitUrl = (url: string) => {
    const q = url.indexOf('?');
    return q === -1 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) };
  };

  return {
    forward,

    async handle(request, clientIp) {
      const url = new URL(request.url);
      const path = url.pathname;
      const query = url.search.slice(1);
      const route = ROUTES[path];
      const reply = (a: ForwardedAnswer) => new Response(a.status === 204 || a.status === 304 ? null : a.body, { status: a.status, headers: a.headers });
      if (!route) return reply(json(404, 'not_found', 'no such route'));
      const refused = methodRefusal(route, request.method);
      if (refused) return reply(refused);
      const body = route.method === 'POST' ? new Uint8Array(await request.arrayBuffer()) : undefined;
      const ip = clientIp ?? ipOf(undefined, request.headers.get('x-forwarded-for') ?? undefined);
      const h = request.headers;
      return reply(
        await forward({
          path,
          query,
          body,
          contentType: h.get('content-type') ?? '',
          origin: h.get('origin') ?? undefined,
          clientIp: ip,
          userAgent: h.get('user-agent') ?? undefined,
          ifNoneMatch: h.get('if-none-match') ?? undefined,
        }),
      );
    },

    middleware(req, res, next) {
      const { path, query } = splitUrl(req.url ?? '');
      const route = ROUTES[path];
      if (!route) return next ? next() : write(res, json(404, 'not_found', 'no such route'));
      const refused = methodRefusal(route, req.method);
      if (refused) return write(res, refused);
      const h = req.headers;
      const input = {
        path,
        query,
        contentType: firstHeader(h['content-type']) ?? '',
        origin: firstHeader(h.origin),
        clientIp: ipOf(req.socket.remoteAddress, firstHeader(h['x-forwarded-for'])),
        userAgent: firstHeader(h['user-agent']),
        ifNoneMatch: firstHeader(h['if-none-match']),
      };
      if (route.method === 'GET') {
        void forward(input).then((a) => write(res, a));
        return;
      }
      readNodeBody(req, route.maxBodyBytes)
        .then(async (body) => {
          if (body === null) {
            write(res, json(413, 'payload_too_large', `body exceeds ${route.maxBodyBytes} bytes`, { connection: 'close' }));
            req.destroy();
            return;
          }
          write(res, await forward({ ...input, body }));
        })
        .catch(() => write(res, json(400, 'invalid_request', 'the request body could not be read')));
    },

    fastify(app, _opts, done) {
      app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, (_req, body, cb) => cb(null, body));
      for (const [path, route] of Object.entries(ROUTES)) {
        const handler: FastifyLikeHandler = async (request, reply) => {
          const h = request.headers;
          const body =
            route.method === 'GET'
              ? undefined
              : Buffer.isBuffer(request.body)
                ? request.body
                : Buffer.from(typeof request.body === 'string' ? request.body : JSON.stringify(request.body ?? ''));
          const a = await forward({
            path,
            query: splitUrl(request.url).query,
            body,
            contentType: firstHeader(h['content-type']) ?? '',
            origin: firstHeader(h.origin),
            clientIp: request.ip,
            userAgent: firstHeader(h['user-agent']),
            ifNoneMatch: firstHeader(h['if-none-match']),
          });
          return reply.code(a.status).headers(a.headers).send(a.body);
        };
        if (route.method === 'GET') app.get(path, handler);
        else app.post(path, handler);
      }
      done?.();
    },
  };
}

/** The same forwarder, named for what it now relays: errors, analytics and flags. */
export const createForwarder = createErrorForwarder;
