import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import { guardedGet } from '../../platform/guarded-get.ts';
import type { Platform } from '../../platform/platform.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { errorAnswers, NoContent } from '../../schemas/api/common.ts';
import {
  AuthorizeAnswer,
  AuthorizeInfo,
  AuthorizeQuery,
  McpTokenList,
  OAuthError,
  RegisterClientBody,
  RegisteredClient,
  RevokeBody,
  TokenAnswer,
  TokenBody,
} from '../../schemas/api/oauth.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { exchangeCode, type GrantOutcome, newGrantId, refreshGrant, revokeByToken, revokeUsersToken } from './oauth-grants.ts';

/**
 * The OAuth 2.1 authorization server of the MCP endpoint (issue 27; MCP authorization, 2025-11-25), top to bottom:
 *   metadata   `/.well-known/oauth-authorization-server` (RFC 8414): PKCE S256 only, public clients, code + refresh
 *   register   a client ID metadata document (an https client_id, fetched through the outbound guard), or
 *              `POST /v1/oauth/register` (RFC 7591): a public client; redirect URIs https, or http on loopback
 *   consent    the console's `/oauth/authorize` page reads `GET /v1/oauth/authorize` (who asks: a dynamically
 *              registered client is marked unverified, with the redirect URI's host) and the signed-in person approves
 *              with `POST /v1/oauth/authorize` (session only): a one-use code, 60 s, bound to the client, the redirect
 *              URI, the PKCE challenge and the resource, starting a grant
 *   token      `POST /v1/oauth/token` (form or JSON): the code with its verifier, or a refresh token (rotated: the
 *              old one stops working), for a `cxm_` access token (1 h) bound to `/v1/mcp` and a `cxr_` refresh token
 *              (30 d); all kept as SHA-256 only. A code or refresh token used twice revokes its grant (oauth-grants.ts)
 *   revoke     `POST /v1/oauth/revoke` (RFC 7009), and the console's list and revoke of a person's MCP tokens: the
 *              token's whole grant
 */
const CODE_MS = 60_000;
const REGISTER_PER_IP_PER_HOUR = 30;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A client's name as the consent page shows it: its own word, so without the characters that could make it pass for
 * another (controls, bidirectional overrides, zero-width and other invisible formatting), whitespace runs as one space.
 */
export function displayName(name: string): string {
  return name
    .replace(/\s+/g, ' ')
    .replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}]/gu, '')
    .trim()
    .slice(0, 100);
}

function redirectAllowed(raw: string): boolean {
  try {
    const u = new URL(raw);
    if (u.hash || u.username || u.password) return false;
    return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.has(u.hostname));
  } catch {
    return false;
  }
}

export function oauthRoutes(platform: Pick<Platform, 'db' | 'clock' | 'config' | 'limiter' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  const base = publicBaseUrl(platform.config);
  const resource = `${base}/v1/mcp`;
  const tags = ['oauth'];

  async function clientOf(id: string) {
    if (id.startsWith('https://')) return metadataDocumentClient(id);
    return (await db.query<{ id: string; name: string; redirect_uris: string[] }>('SELECT id, name, redirect_uris FROM oauth_clients WHERE id = $1', [id]))
      .rows[0];
  }
  /**
   * A client ID metadata document (the MCP authorization spec's preferred registration): the client_id is an https URL
   * whose JSON names the client and its redirect URIs. Fetched through the outbound guard (public addresses only, no
   * redirects, 5 s, 64 KiB) at each authorization, and remembered for the token endpoint.
   */
  async function metadataDocumentClient(url: string) {
    let doc: { client_id?: unknown; client_name?: unknown; redirect_uris?: unknown };
    try {
      const r = await guardedGet(url, {
        guard: platform.outbound,
        use: 'provider_api',
        headers: { accept: 'application/json' },
        timeoutMs: 5000,
        maxBytes: 64 * 1024,
      });
      if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
      doc = JSON.parse(r.body.toString('utf8'));
    } catch (err) {
      throw new ServiceError('invalid_request', `the client ID metadata document could not be read: ${(err as Error).message}`);
    }
    const uris = Array.isArray(doc.redirect_uris) ? doc.redirect_uris.filter((u): u is string => typeof u === 'string' && redirectAllowed(u)).slice(0, 10) : [];
    if (doc.client_id !== url || !uris.length)
      throw new ServiceError('invalid_request', 'the metadata document must name this client_id and at least one allowed redirect URI');
    const name = (typeof doc.client_name === 'string' && displayName(doc.client_name)) || new URL(url).host;
    await db.query(
      `INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris`,
      [url, name, uris, new Date(clock.now())],
    );
    return { id: url, name, redirect_uris: uris };
  }
  async function checkRequest(q: { client_id: string; redirect_uri: string; resource?: string }) {
    const client = await clientOf(q.client_id);
    if (!client) throw new ServiceError('invalid_request', 'unknown client_id: the client must register first');
    if (!client.redirect_uris.includes(q.redirect_uri)) throw new ServiceError('invalid_request', 'redirect_uri is not one the client registered');
    if (q.resource !== undefined && q.resource.replace(/\/+$/, '') !== resource) throw new ServiceError('invalid_request', `resource must be ${resource}`);
    return client;
  }
  return async (app) => {
    // The token and revocation endpoints take form bodies, as OAuth clients send them.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    /** An OAuth error answer (RFC 6749 §5.2): 400 with `error` and `error_description`. */
    const oauthError = (reply: { code(n: number): unknown }, error: string, description: string) => {
      reply.code(400);
      return { error, error_description: description };
    };

    app.get(
      '/.well-known/oauth-authorization-server',
      { config: { auth: AUTH.public }, schema: { tags, summary: 'OAuth authorization server metadata (RFC 8414)' } },
      async () => ({
        issuer: base,
        authorization_endpoint: `${base}/oauth/authorize`,
        token_endpoint: `${base}/v1/oauth/token`,
        registration_endpoint: `${base}/v1/oauth/register`,
        revocation_endpoint: `${base}/v1/oauth/revoke`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        revocation_endpoint_auth_methods_supported: ['none'],
        scopes_supported: ['mcp'],
        client_id_metadata_document_supported: true,
      }),
    );

    app.post(
      '/v1/oauth/register',
      {
        config: { auth: AUTH.public },
        schema: {
          tags,
          summary: 'Register a public OAuth client (RFC 7591)',
          body: RegisterClientBody,
          response: { 201: RegisteredClient, 400: OAuthError, ...errorAnswers(429) },
        },
      },
      async (request, reply) => {
        const rate = await limiter.hit(`oauth-register:${request.ip}`, REGISTER_PER_IP_PER_HOUR, 60 * 60_000);
        if (!rate.allowed) throw new ServiceError('rate_limited', 'too many client registrations from this address', { retryAfterSec: rate.retryAfterSec });
        const b = request.body;
        if (!b.redirect_uris.every(redirectAllowed))
          return oauthError(reply, 'invalid_redirect_uri', 'redirect URIs must be https, or http on localhost/127.0.0.1/[::1], without a fragment');
        if (b.token_endpoint_auth_method && b.token_endpoint_auth_method !== 'none')
          return oauthError(reply, 'invalid_client_metadata', 'only public clients (token_endpoint_auth_method none, with PKCE) are registered');
        const id = newId('oac_');
        const now = clock.now();
        const name = displayName(b.client_name ?? '') || 'MCP client';
        await db.query('INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)', [id, name, b.redirect_uris, new Date(now)]);
        return reply.code(201).send({
          client_id: id,
          client_id_issued_at: Math.floor(now / 1000),
          client_name: name,
          redirect_uris: b.redirect_uris,
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none' as const,
        });
      },
    );

    app.get(
      '/v1/oauth/authorize',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags,
          summary: 'Who asks for access (the console consent page reads it)',
          querystring: AuthorizeQuery,
          response: { 200: AuthorizeInfo, ...errorAnswers(400) },
        },
      },
      async (request) => {
        const client = await checkRequest(request.query);
        const fromDocument = client.id.startsWith('https://');
        const redirect = new URL(request.query.redirect_uri);
        return {
          client: {
            id: client.id,
            name: displayName(client.name),
            registration: fromDocument ? ('metadata_document' as const) : ('dynamic' as const),
            unverified: !fromDocument,
            documentHost: fromDocument ? new URL(client.id).host : null,
          },
          redirectHost: redirect.host,
          redirectUri: redirect.href,
          redirectLoopback: LOOPBACK.has(redirect.hostname),
          resource,
        };
      },
    );

    app.post(
      '/v1/oauth/authorize',
      {
        config: { auth: AUTH.sessionOnly },
        schema: {
          tags,
          summary: 'Approve: a one-use code for the client, sent to its redirect URI',
          body: AuthorizeQuery,
          response: { 200: AuthorizeAnswer, ...errorAnswers(400) },
        },
      },
      async (request) => {
        const q = request.body;
        await checkRequest(q);
        const code = newToken(TOKEN_PREFIX.oauthCode);
        await db.query(
          `INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, resource, expires_at, grant_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [tokenHash(code), q.client_id, userIdOf(request), q.redirect_uri, q.code_challenge, resource, new Date(clock.now() + CODE_MS), newGrantId()],
        );
        const to = new URL(q.redirect_uri);
        to.searchParams.set('code', code);
        if (q.state !== undefined) to.searchParams.set('state', q.state);
        to.searchParams.set('iss', base);
        return { redirect: to.href };
      },
    );

    app.post(
      '/v1/oauth/token',
      {
        config: { auth: AUTH.public },
        schema: {
          tags,
          summary: 'Exchange a code (with its PKCE verifier) or a refresh token',
          body: TokenBody,
          response: { 200: TokenAnswer, 400: OAuthError },
        },
      },
      async (request, reply) => {
        const b = request.body;
        reply.header('cache-control', 'no-store');
        if (b.resource !== undefined && b.resource.replace(/\/+$/, '') !== resource) return oauthError(reply, 'invalid_target', `resource must be ${resource}`);
        /** A reuse is refused as any spent grant is, and what it revoked is logged: someone else held the code or token. */
        const answer = (out: GrantOutcome, what: string) => {
          if (out.kind === 'issued') return out.tokens;
          if (out.kind === 'reused') {
            request.log.warn({ client_id: b.client_id, revoked: out.revoked }, `oauth: a spent ${what} was used again; its grant is revoked`);
            return oauthError(reply, 'invalid_grant', `the ${what} was already used; every token issued from it is revoked`);
          }
          return oauthError(reply, 'invalid_grant', out.description);
        };
        if (b.grant_type === 'authorization_code') {
          if (!b.code || !b.code_verifier || !b.client_id || !b.redirect_uri)
            return oauthError(reply, 'invalid_request', 'code, code_verifier, client_id and redirect_uri are required');
          const out = await exchangeCode(
            db,
            { code: b.code, verifier: b.code_verifier, clientId: b.client_id, redirectUri: b.redirect_uri, resource },
            clock.now(),
          );
          return answer(out, 'code');
        }
        if (b.grant_type === 'refresh_token') {
          if (!b.refresh_token) return oauthError(reply, 'invalid_request', 'refresh_token is required');
          return answer(await refreshGrant(db, { refreshToken: b.refresh_token, clientId: b.client_id, resource }, clock.now()), 'refresh token');
        }
        return oauthError(reply, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
      },
    );

    app.post(
      '/v1/oauth/revoke',
      { config: { auth: AUTH.public }, schema: { tags, summary: 'Revoke an access or refresh token (RFC 7009; 200 whatever it was)', body: RevokeBody } },
      async (request) => {
        await revokeByToken(db, request.body.token, clock.now());
        return {};
      },
    );

    app.get(
      '/v1/oauth/tokens',
      { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: "The signed-in person's MCP tokens", response: { 200: McpTokenList } } },
      async (request) => {
        const r = await db.query<{ id: string; name: string; created_at: Date; expires_at: Date; last_used_at: Date | null }>(
          `SELECT t.id, c.name, t.created_at, t.refresh_expires_at AS expires_at, t.last_used_at FROM mcp_tokens t JOIN oauth_clients c ON c.id = t.client_id
           WHERE t.user_id = $1 AND t.revoked_at IS NULL ORDER BY t.created_at DESC LIMIT 100`,
          [userIdOf(request)],
        );
        return {
          tokens: r.rows.map((x) => ({
            id: x.id,
            client: x.name,
            createdAt: new Date(x.created_at).toISOString(),
            expiresAt: new Date(x.expires_at).toISOString(),
            lastUsedAt: x.last_used_at ? new Date(x.last_used_at).toISOString() : null,
          })),
        };
      },
    );

    app.delete(
      '/v1/oauth/tokens/:id',
      { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: 'Revoke one of your MCP tokens', response: { 204: NoContent, ...errorAnswers(404) } } },
      async (request, reply) => {
        const id = (request.params as { id: string }).id;
        if (!(await revokeUsersToken(db, userIdOf(request), id, clock.now()))) throw new ServiceError('not_found', 'no such token');
        return reply.code(204).send(null);
      },
    );
  };
}
