import type { FastifyInstance } from 'fastify';

/**
 * Single-process mode: every request the edge does not serve itself is relayed to the Fastify API
 * in the same process (app.inject), so one port answers every /v1 route. In the distributed setup
 * the reverse proxy routes instead and the edge answers 404 for anything else.
 */
export interface ForwardRequest {
  method: string;
  /** Path and query string, as received. */
  url: string;
  /** Lower-cased header names; repeated headers joined with ", " (uWS hands them over one by one). */
  headers: Record<string, string>;
  body: Buffer;
  remoteAddress: string;
}

export interface ForwardResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: Buffer;
}

export type Forwarder = (req: ForwardRequest) => Promise<ForwardResponse>;

/** A Forwarder that runs the request through the Fastify app without a socket. */
export function injectForwarder(app: FastifyInstance): Forwarder {
  return async (req) => {
    const res = await app.inject({
      method: req.method.toUpperCase() as 'GET',
      url: req.url,
      headers: req.headers,
      payload: req.body.length ? req.body : undefined,
      remoteAddress: req.remoteAddress,
    });
    return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
  };
}
