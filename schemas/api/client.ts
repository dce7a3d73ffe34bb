import type { z } from 'zod';
import { type HttpMethod, ROUTES, type RouteId } from './route-table.ts';
import type { RouteShapes, ShapedRouteId } from './route-shapes.ts';

/**
 * The one typed client of the API, shared by the console, the CLI and the MCP tools: `call(id, { params, query,
 * body })` takes a route's id from the route table, fills its path, and answers with the route's success type from its
 * shape. A path, a parameter or an answer that changes fails every caller's typecheck. How the request travels (fetch
 * with the session cookie, fetch with a bearer token, Fastify's inject) and how a failure is reported are the
 * caller's: it gives a Transport. Zod is imported as types only, so a browser bundle carries none.
 */

type Input<T> = T extends z.ZodType ? z.input<T> : never;
type Output<T> = T extends z.ZodType ? z.output<T> : never;
type SuccessStatus = 200 | 201 | 202 | 204;

/** What a route answers on success: its 2xx answer's type (`null` for a 204). */
export type AnswerOf<Id extends ShapedRouteId> = RouteShapes[Id] extends { response: infer R } ? Output<R[keyof R & SuccessStatus]> : unknown;

/** A route that takes multipart/form-data (its shape says so in `consumes`) takes a FormData body, which no schema checks. */
type MultipartBody<S> = S extends { consumes: readonly (infer C)[] }
  ? 'multipart/form-data' extends C
    ? { body: FormData }
    : { body?: never }
  : { body?: never };

/** What a call names: the path's params, the query and the body, each only where the route declares it. */
export type ArgsOf<Id extends ShapedRouteId> = (RouteShapes[Id] extends { params: infer P } ? { params: Input<P> } : { params?: never }) &
  (RouteShapes[Id] extends { querystring: infer Q } ? { query?: Input<Q> } : { query?: never }) &
  (RouteShapes[Id] extends { body: infer B } ? { body: Input<B> } : MultipartBody<RouteShapes[Id]>);

/** The arguments are optional where a route needs none. */
type CallArgs<Id extends ShapedRouteId> = object extends ArgsOf<Id> ? [args?: ArgsOf<Id>] : [args: ArgsOf<Id>];

/** Sends one request (path with its query string; a JSON body, a FormData or undefined) and answers the parsed JSON, or throws. */
export type Transport = (method: HttpMethod, path: string, body: unknown) => Promise<unknown>;

export interface ApiClient {
  call<Id extends ShapedRouteId>(id: Id, ...args: CallArgs<Id>): Promise<AnswerOf<Id>>;
}

export function createApiClient(transport: Transport): ApiClient {
  return {
    call(id, ...[args]) {
      const a = (args ?? {}) as { params?: object; query?: object; body?: unknown };
      return transport(ROUTES[id].method, routePath(id, a.params, a.query), a.body) as Promise<never>;
    },
  };
}

/**
 * A route's path with its params filled (each escaped) and the query appended (empty, null and undefined values
 * left out): for a link (`<a href>`) or a request made otherwise. A missing param throws: it is the caller's bug.
 */
export function routePath(id: RouteId, params: object = {}, query: object = {}): string {
  const values = params as Record<string, unknown>;
  const path = ROUTES[id].path.replace(/:(\w+)/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined || v === null || v === '') throw new Error(`route ${id} needs the param ${name}`);
    return encodeURIComponent(String(v));
  });
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
