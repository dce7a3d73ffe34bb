import type { Readable } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { DISK_FULL_MESSAGE, isDiskFullError } from '../platform/data-dir/disk-space.ts';
import { BusUnavailableError } from '../platform/ports/bus.ts';
import { DISK_FULL_RETRY_AFTER_SEC, ServiceError, UNAVAILABLE_RETRY_AFTER_SEC, type ErrorBody, type ErrorCode } from '../schemas/error-codes.ts';
import { LIMITS } from '../schemas/limits.ts';

/**
 * One wire shape for every failure (spec §8.1): `{ error, message }`, plus `fields` on
 * invalid_request. Expected failures arrive as ServiceError; framework errors (validation, body
 * size, content type, malformed JSON) are mapped to our codes; anything else is a 500 whose
 * details go to the log, never to the caller.
 */

/** When a 429 carries no Retry-After of its own (a route forgot it), clients still get one. */
const DEFAULT_RETRY_AFTER_SEC = 60;

export function sendError(reply: FastifyReply, err: ServiceError): FastifyReply {
  if (err.extra.retryAfterSec !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(err.extra.retryAfterSec))));
  return reply.code(err.status).type('application/json').send(err.toBody());
}

/** Map any thrown value to the ServiceError we answer with. Exported for unit tests. */
export function toServiceError(err: unknown): { error: ServiceError; unexpected: boolean } {
  if (err instanceof ServiceError) return { error: err, unexpected: false };
  // A store or the bus out of space (ENOSPC, Postgres 53100, ClickHouse NOT_ENOUGH_SPACE): a retry later helps.
  if (isDiskFullError(err)) {
    return { error: new ServiceError('unavailable', DISK_FULL_MESSAGE, { retryAfterSec: DISK_FULL_RETRY_AFTER_SEC }), unexpected: false };
  }
  // The bus is away (Kafka down): a retry later helps, as on the edge.
  if (err instanceof BusUnavailableError) {
    return {
      error: new ServiceError('unavailable', 'temporarily unavailable, retry later', { retryAfterSec: UNAVAILABLE_RETRY_AFTER_SEC }),
      unexpected: false,
    };
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const ctx = (err as { validationContext?: string }).validationContext;
    const fields = err.validation.map((v) => ({
      path: [ctx, ...v.instancePath.split('/').filter(Boolean)].filter(Boolean).join('.'),
      message: v.message ?? 'invalid',
    }));
    return {
      error: new ServiceError('invalid_request', `invalid ${ctx ?? 'request'}: ${fields.map((f) => `${f.path}: ${f.message}`).join('; ')}`, { fields }),
      unexpected: false,
    };
  }
  const fe = err as Partial<FastifyError> & { validation?: Array<{ instancePath?: string; message?: string }> };
  if (fe && typeof fe === 'object' && !isResponseSerializationError(fe as never)) {
    if (Array.isArray(fe.validation)) {
      const fields = fe.validation.map((v) => ({ path: (v.instancePath ?? '').split('/').filter(Boolean).join('.'), message: v.message ?? 'invalid' }));
      return { error: new ServiceError('invalid_request', fe.message ?? 'invalid request', { fields }), unexpected: false };
    }
    switch (fe.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return { error: new ServiceError('payload_too_large', 'request body is too large'), unexpected: false };
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return { error: new ServiceError('unsupported_media_type', 'send the body as application/json'), unexpected: false };
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return { error: new ServiceError('invalid_request', 'the body is not valid JSON'), unexpected: false };
    }
    const status = (fe as { statusCode?: number }).statusCode;
    if (fe instanceof SyntaxError && status === 400) return { error: new ServiceError('invalid_request', 'the body is not valid JSON'), unexpected: false };
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const byStatus: Record<number, ErrorCode> = {
        400: 'invalid_request',
        401: 'unauthorized',
        403: 'forbidden',
        404: 'not_found',
        405: 'method_not_allowed',
        409: 'conflict',
        413: 'payload_too_large',
        415: 'unsupported_media_type',
        429: 'rate_limited',
      };
      const code = byStatus[status] ?? 'invalid_request';
      return {
        error: new ServiceError(code, fe.message || code, code === 'rate_limited' ? { retryAfterSec: DEFAULT_RETRY_AFTER_SEC } : {}),
        unexpected: false,
      };
    }
  }
  return { error: new ServiceError('internal', 'something went wrong on our side; it has been logged'), unexpected: true };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const { error, unexpected } = toServiceError(err);
    if (unexpected) request.log.error({ err, url: request.url, method: request.method }, 'unhandled error');
    // A body over the route's limit that was not read to its end: the rest is read and thrown away first (bounded,
    // LIMITS.oversizeBody), or the connection closes on unread bytes and a client still writing gets a reset, not this 413.
    // (`complete` is false only on a socket's request still arriving; app.inject's has none and is never drained.)
    if (error.code === 'payload_too_large' && request.raw.complete === false && !request.raw.destroyed)
      return drainBody(request.raw, LIMITS.oversizeBody).then(() => sendError(reply, error));
    return sendError(reply, error);
  });
  app.setNotFoundHandler((request, reply) => sendError(reply, new ServiceError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)));
  // Postgres text cannot hold NUL (U+0000), nor jsonb a lone UTF-16 surrogate: either would fail deep in a
  // query as a 500. They are refused up front, as bad input: NUL in the URL (%00; path parameters and
  // queries are decoded), either in a JSON body (any key or value).
  app.addHook('onRequest', async (request) => {
    if (request.url.includes('%00')) throw new ServiceError('invalid_request', 'NUL characters (%00) are not allowed in the URL');
  });
  app.addHook('preValidation', async (request) => {
    if (request.body !== undefined && holdsUnstorableText(request.body)) {
      throw new ServiceError('invalid_request', 'NUL characters (\\u0000) and unpaired UTF-16 surrogates are not allowed in the body');
    }
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode === 429 && !reply.hasHeader('retry-after')) reply.header('retry-after', String(DEFAULT_RETRY_AFTER_SEC));
    return payload;
  });
}

/** Read a request's remaining body and drop it: until its end, `drainBytes` more, `drainMs`, or the client going away. */
function drainBody(raw: Readable, bounds: { drainBytes: number; drainMs: number }): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0;
    const done = () => {
      clearTimeout(timer);
      raw.off('data', onData).off('end', done).off('error', done).off('close', done);
      raw.pause(); // past the bounds: the answer goes out and the connection closes on what is left
      resolve();
    };
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > bounds.drainBytes) done();
    };
    const timer = setTimeout(done, bounds.drainMs).unref();
    raw.on('data', onData).on('end', done).on('error', done).on('close', done);
    raw.resume();
  });
}

function holdsUnstorableText(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000') || !value.isWellFormed();
  if (depth > 64 || !value || typeof value !== 'object') return false;
  // A parsed JSON body is plain objects and arrays only. Anything else (a streamed upload's request, whose socket
  // leads to the whole server: walking it never ended over a real socket) holds no text of the client's to store.
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return false;
  if (Array.isArray(value)) return value.some((v) => holdsUnstorableText(v, depth + 1));
  for (const [k, v] of Object.entries(value)) if (holdsUnstorableText(k) || holdsUnstorableText(v, depth + 1)) return true;
  return false;
}

export type { ErrorBody };
