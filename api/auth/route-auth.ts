import type { Scope } from '../../schemas/scopes.ts';
import type {} from 'fastify';

/**
 * Which credentials reach a route (spec §5). Every route declares one of these in
 * `config.auth`; the auth hook (api/auth/auth-plugin.ts) resolves the caller's credential, refuses
 * what the declaration does not allow, and for `/projects/:slug/...` routes checks that the
 * credential reaches that project.
 *
 * - `public`: no credential needed (sign-in, the API index, OpenAPI).
 * - `session`: a console session cookie reaches it.
 * - `cli`: a `cx_cli_` token reaches it (the user's projects, CLI flows).
 * - `keyScope`: a `cx_live_`/`cx_test_` key holding this scope reaches it (project routes only).
 * - `anyKey`: any `cx_live_`/`cx_test_` key reaches it, whatever its scopes: the route checks each action against
 *   them itself (`/v1/mcp`, whose tools call the scoped routes with the caller's key).
 * Ingest keys (`cak_live_`) reach no route of the API: they live on the ingest edge alone.
 */
export interface RouteAuth {
  public?: boolean;
  session?: boolean;
  cli?: boolean;
  keyScope?: Scope;
  anyKey?: boolean;
}

export type Credential =
  | { kind: 'session'; userId: string; sessionId: string }
  | { kind: 'cli'; userId: string; tokenId: string }
  | { kind: 'project_key'; keyId: string; projectId: string; scopes: Scope[]; mode: 'live' | 'test' };

/** The project a `/projects/:slug` route acts on, once the credential was checked against it. */
export interface ProjectRef {
  id: string;
  slug: string;
  name: string;
}

/** Shorthands for route declarations. */
export const AUTH = {
  public: { public: true },
  sessionOnly: { session: true },
  user: { session: true, cli: true },
  project: (keyScope: Scope): RouteAuth => ({ session: true, cli: true, keyScope }),
} as const satisfies Record<string, RouteAuth | ((s: Scope) => RouteAuth)>;

// Every route family reads the resolved credential and project from the request, and declares its
// auth in the route config; the auth hook (api/auth/auth-plugin.ts) fills these in.
declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    /** The caller's credential once the auth hook accepted it; null on public routes. */
    credential: Credential | null;
    /** The project of a `/projects/:slug` route (or a project key's own project); null otherwise. */
    project: ProjectRef | null;
  }
}
