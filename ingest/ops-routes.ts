import type uWS from 'uWebSockets.js';
import type { Logger } from '../platform/logger.ts';
import { OPS_PATHS, type Ops } from '../platform/ops/ops.ts';
import { send, sendError, watchedReply } from './http/uws-reply.ts';

/**
 * `/livez`, `/readyz` and `/metrics` on the edge's port (platform/ops/ops.ts); in `npm start` this port serves them
 * for every role. A caller /metrics does not serve (no token, a wrong one) is yielded to the next route, the one that
 * answers unknown paths (the distributed edge's 404, or in `npm start` the relay to the API, whose /metrics says the
 * same 404): exactly what a path that does not exist gets.
 */
export function registerOpsRoutes(app: uWS.TemplatedApp, ops: Ops, log: Logger): void {
  for (const path of OPS_PATHS) {
    app.get(path, (res, req) => {
      if (!ops.serves(path, req.getHeader('authorization'))) {
        req.setYield(true);
        return;
      }
      const st = watchedReply(res, req);
      ops.answer(path).then(
        (a) => send(res, st, a.status, a.headers, a.body),
        (err) => {
          log.error({ err, path }, 'an ops route failed');
          sendError(res, st, 'internal', 'internal error');
        },
      );
    });
  }
}
