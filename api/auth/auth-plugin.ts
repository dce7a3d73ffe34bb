import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../schemas/error-codes.ts';
import { SCOPES } from '../../schemas/scopes.ts';
import type { Platform } from '../../platform/platform.ts';
import { cliRoutes } from '../../schemas/api/cli.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';
import { resolveCredential } from './credentials.ts';
import { credentialsRepository } from './credentials-repository.ts';
import type { Credential, ProjectRef, RouteAuth } from './route-auth.ts';

/**
 * The auth hook every API route passes through (spec §5). Runs at onRequest, before the body is
 * even read, so an unauthenticated caller learns nothing about a route's body schema:
 *  1. the route's `config.auth` (RouteAuth); a route registered without one fails at start-up;
 *  2. the credential (session cookie or Bearer token), refused when the declaration does not allow
 *     its kind (§5.2: session-only routes refuse keys, `/v1/cli` refuses project keys, ingest keys
 *     reach nothing here, a key needs the route's scope);
 *  3. cookie-authenticated writes must come from our own origin and carry JSON (CSRF);
 *  4. `/projects/:slug` routes: the project must exist and the credential must reach it. A project
 *     the caller cannot reach answers 404 exactly like one that does not exist, so slugs do not leak.
 */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
export const PROJECT_NOT_FOUND = 'project not found';

/** A registered route and who reaches it: what the auth matrix test walks. */
export interface DeclaredRoute {
  method: string;
  url: string;
  auth: RouteAuth;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered after the auth hook, with its declaration (HEAD twins excluded). */
    declaredRoutes: DeclaredRoute[];
  }
}

export function installAuth(app: FastifyInstance, platform: Platform): void {
  app.decorateRequest('credential', null);
  app.decorateRequest('project', null);
  const declared: DeclaredRoute[] = [];
  app.decorate('declaredRoutes', declared);

  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth as RouteAuth | undefined;
    const where = `${String(route.method)} ${route.url}`;
    if (!auth || typeof auth !== 'object') throw new Error(`route ${where} declares no config.auth (see api/auth/route-auth.ts)`);
    if (!auth.public && !auth.session && !auth.cli && !auth.keyScope && !auth.anyKey) throw new Error(`route ${where}: config.auth allows nobody`);
    if (auth.keyScope && !(auth.keyScope in SCOPES)) throw new Error(`route ${where}: unknown scope ${auth.keyScope}`);
    for (const method of [route.method].flat()) if (method !== 'HEAD') declared.push({ method, url: route.url, auth });
  });

  app.addHook('onRequest', async (request) => {
    const auth = request.routeOptions.config?.auth as RouteAuth | undefined;
    if (!auth) {
      // The not-found handler has no route; any real route without a declaration is refused.
      if (request.routeOptions.url === undefined) return;
      throw new ServiceError('forbidden', 'route has no access declaration');
    }
    if (auth.public) return;

    const resolved = await resolveCredential(platform, request);
    if (!resolved) throw new ServiceError('unauthorized', 'sign in, or send Authorization: Bearer <token>');
    const { credential, carrier } = resolved;
    checkKind(auth, credential, request.routeOptions.url ?? '');
    if (carrier === 'cookie' && WRITE_METHODS.has(request.method)) {
      assertNotCrossSite(request, platform);
      assertJsonBody(request);
    }
    request.credential = credential;

    const slug = (request.params as Record<string, unknown> | undefined)?.slug;
    if (typeof slug === 'string') request.project = await loadProject(platform, credential, slug);
    else if (credential.kind === 'project_key') request.project = (await credentialsRepository.projectById(platform.db, credential.projectId)) ?? null;
  });
}

/**
 * Whether a credential's kind and scopes pass a route's declaration (the hook's step 2, without the project check):
 * what MCP's tools/list asks, so an agent is shown only the tools its credential can use.
 */
export function credentialMayCall(auth: RouteAuth, cred: Credential, url: string): boolean {
  if (auth.public) return true;
  try {
    checkKind(auth, cred, url);
    return true;
  } catch {
    return false;
  }
}

/** The CLI family's paths (the routes schemas/api/cli.ts shapes): no project key reaches them, whatever they declare. */
const CLI_FAMILY = new Set<string>(Object.keys(cliRoutes).map((id) => ROUTES[id as keyof typeof cliRoutes].path));

function checkKind(auth: RouteAuth, cred: Credential, url: string): void {
  const cliFamily = CLI_FAMILY.has(url);
  const sessionOnly = !!auth.session && !auth.cli && !auth.keyScope;
  switch (cred.kind) {
    case 'session':
      if (!auth.session) throw new ServiceError('forbidden', 'this route is not available to console sessions; use a CLI token or an API key');
      return;
    case 'cli':
      if (!auth.cli) {
        if (sessionOnly) throw new ServiceError('session_required', 'this route needs a signed-in console session');
        throw new ServiceError('forbidden', 'this route is not available to CLI tokens');
      }
      return;
    case 'project_key':
      if (cliFamily) throw new ServiceError('forbidden', 'project API keys (cx_live_/cx_test_) cannot use the CLI routes; sign in with the CLI');
      if (auth.anyKey) return;
      if (!auth.keyScope) {
        if (sessionOnly) throw new ServiceError('session_required', 'this route needs a signed-in console session; project API keys are refused');
        throw new ServiceError('forbidden', 'project API keys cannot use this route; it needs a user credential (session or CLI token)');
      }
      if (!cred.scopes.includes(auth.keyScope))
        throw new ServiceError('insufficient_scope', `this API key lacks the scope ${auth.keyScope}`, { body: { requiredScope: auth.keyScope } });
      return;
  }
}

/**
 * Cross-site check for cookie writes (and sign-in). `same-site` is refused on purpose: tenants'
 * apps live on sibling subdomains of a hosting platform, so "same site" is not "us".
 */
export function assertNotCrossSite(request: FastifyRequest, platform: Pick<Platform, 'config'>): void {
  const fetchSite = request.headers['sec-fetch-site'];
  if (fetchSite !== undefined) {
    if (fetchSite === 'same-origin' || fetchSite === 'none') return;
    throw new ServiceError('cross_site_request', 'cross-site request refused for a cookie-authenticated write');
  }
  const origin = request.headers.origin;
  if (origin === undefined) return; // not a browser (browsers send Origin on every POST/PUT/PATCH/DELETE)
  const allowed = new Set<string>();
  if (platform.config.PUBLIC_BASE_URL) allowed.add(new URL(platform.config.PUBLIC_BASE_URL).origin);
  if (request.host) allowed.add(`${request.protocol}://${request.host}`);
  if (!allowed.has(origin)) throw new ServiceError('cross_site_request', `origin ${origin} may not write with this session`);
}

/** HTML forms can post form-encoded or text/plain cross-site without a preflight; JSON cannot. */
function assertJsonBody(request: FastifyRequest): void {
  const length = Number(request.headers['content-length'] ?? 0);
  const hasBody = length > 0 || request.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return;
  const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new ServiceError('cross_site_request', 'cookie-authenticated writes accept only application/json bodies');
}

async function loadProject(platform: Pick<Platform, 'db'>, cred: Credential, slug: string): Promise<ProjectRef> {
  const project =
    cred.kind === 'project_key'
      ? await credentialsRepository.projectOfKey(platform.db, slug, cred.projectId)
      : await credentialsRepository.projectOfMember(platform.db, slug, cred.userId);
  if (!project) throw new ServiceError('not_found', PROJECT_NOT_FOUND);
  return project;
}

/** The signed-in user's id; for routes declared session/cli only. */
export function userIdOf(request: FastifyRequest): string {
  const c = request.credential;
  if (!c || c.kind === 'project_key') throw new ServiceError('forbidden', 'this route needs a user credential');
  return c.userId;
}

/** The project resolved by the auth hook; for `/projects/:slug` routes. */
export function projectOf(request: FastifyRequest): ProjectRef {
  if (!request.project) throw new ServiceError('not_found', PROJECT_NOT_FOUND);
  return request.project;
}
