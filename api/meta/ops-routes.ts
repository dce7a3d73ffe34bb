import type { FastifyPluginAsync } from 'fastify';
import { OPS_PATHS, type Ops } from '../../platform/ops/ops.ts';
import { AUTH } from '../auth/route-auth.ts';

/**
 * `/livez`, `/readyz` and `/metrics` on the API's port (platform/ops/ops.ts), public as far as the auth hook goes and
 * left out of OpenAPI (they are the operator's, not the API's). A caller /metrics does not serve (no token, a wrong
 * one) gets the not-found handler's answer, the same as any path that does not exist.
 */
export function opsRoutes(ops: Ops): FastifyPluginAsync {
  return async (app) => {
    for (const path of OPS_PATHS) {
      app.get(path, { config: { auth: AUTH.public }, schema: { hide: true } }, async (request, reply) => {
        if (!ops.serves(path, request.headers.authorization)) return reply.callNotFound();
        const a = await ops.answer(path);
        return reply.code(a.status).headers(Object.fromEntries(a.headers)).send(a.body);
      });
    }
  };
}
