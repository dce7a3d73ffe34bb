import type uWS from 'uWebSockets.js';
import type { Logger } from '../../platform/logger.ts';

/**
 * uWS ends the process when a route handler throws. Every handler registered through the app this returns is
 * wrapped: a throw (our bug: bad input is a refusal, never a throw) is logged, counted as `handler_threw`, and
 * answered 500 `internal` when nothing was answered yet; the edge, and every role beside it in the single
 * process, keeps serving.
 */
const ROUTE_METHODS = ['get', 'post', 'put', 'del', 'patch', 'options', 'head', 'any', 'connect', 'trace'] as const;
const INTERNAL_BODY = '{"error":"internal","message":"internal error"}';

export function guardedApp(app: uWS.TemplatedApp, log: Logger, counts: Record<string, number>): uWS.TemplatedApp {
  for (const method of ROUTE_METHODS) {
    const register = (app[method] as (pattern: string, handler: (res: uWS.HttpResponse, req: uWS.HttpRequest) => void) => uWS.TemplatedApp).bind(app);
    (app as unknown as Record<string, unknown>)[method] = (pattern: string, handler: (res: uWS.HttpResponse, req: uWS.HttpRequest) => void | Promise<void>) =>
      register(pattern, (res, req) => {
        try {
          const out = handler(res, req);
          if (out instanceof Promise) out.catch((err) => threw(res, err));
        } catch (err) {
          threw(res, err);
        }
      });
  }
  function threw(res: uWS.HttpResponse, err: unknown): void {
    counts.handler_threw = (counts.handler_threw ?? 0) + 1;
    log.error({ err }, 'an edge handler threw; answered 500');
    try {
      res.cork(() => res.writeStatus('500 Internal Server Error').writeHeader('Content-Type', 'application/json').end(INTERNAL_BODY, true));
    } catch {
      // already answered or aborted: nothing more to say
    }
  }
  return app;
}
