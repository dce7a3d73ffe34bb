import { randomBytes } from 'node:crypto';

/**
 * The MCP endpoint's tools call the public routes in-process (app.inject) with the caller's own token. A `cxm_` MCP
 * token is bound to `/v1/mcp`, so those calls carry this header too: a secret made at start-up, never sent out of the
 * process, that lets the token through on the route the tool names. Nothing outside the process can produce it.
 */
export const INTERNAL_CALL_HEADER = 'x-service-internal-call';
export const INTERNAL_CALL_SECRET = randomBytes(32).toString('base64url');
