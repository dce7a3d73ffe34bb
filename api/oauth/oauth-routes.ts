import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { authorizingClient } from './oauth-clients.ts';
import { exchangeCode, type GrantOutcome, refreshGrant, revokeByToken, revokeUsersToken } from './oauth-grants.ts';
import { oauthRepository } from './oauth-repository.ts';
import {
  approvalRedirect,
  authorizeRefusal,
  consentInfo,
  displayName,
  mcpResource,
  type OAuthFailure,
  registrationRefusal,
  resourceAccepted,
  serverMetadata,
} from './oauth-rules.ts';

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
 * The rules are oauth-rules.ts, the tables oauth-repository.ts; this file applies them to requests.
 */
const REGISTER_PER_IP_PER_HOUR = 30;

/** An OAuth error answer (RFC 6749 §5.2): 400 with `error` and `error_description`. */
function oauthError(reply: { code(n: number): unknown }, failure: OAuthFailure): OAuthFailure {
  reply.code(400);
  return failure;
}

export function oauthRoutes(platform: Pick<Platform, 'db' | 'clock' | 'config' | 'limiter' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock, limiter } = platform;
  const base = publicBaseUrl(platform.config);
  const resource = mcpResource(base);

  /** The client of an authorization request that names it, a redirect URI it registered and this resource; else 400. */
  async function checkRequest(q: { client_id: string; redirect_uri: string; resource?: string }) {
    const client = await authorizingClient(platform, q.client_id);
    if (!client) throw new ServiceError('invalid_request', 'unknown client_id: the client must register first');
    const refusal = authorizeRefusal(client, q, resource);
    if (refusal) throw new ServiceError('invalid_request', refusal);
    return client;
  }

  return async (app) => {
    // The token and revocation endpoints take form bodies, as OAuth clients send them.
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16 * 1024 }, (_req, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );

    app.route({
      ...declared('oauthServerMetadata'),
      config: { auth: AUTH.public },
      handler: async () => serverMetadata(base),
    });

    app.route({
      ...declared('oauthRegister'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        const rate = await limiter.hit(`oauth-register:${request.ip}`, REGISTER_PER_IP_PER_HOUR, 60 * 60_000);
        if (!rate.allowed) throw new ServiceError('rate_limited', 'too many client registrations from this address', { retryAfterSec: rate.retryAfterSec });
        const b = request.body;
        const refusal = registrationRefusal(b);
        if (refusal) return oauthError(reply, refusal);
        const now = clock.now();
        const client = await oauthRepository.register(db, { name: displayName(b.client_name ?? '') || 'MCP client', redirectUris: b.redirect_uris }, now);
        return reply.code(201).send({
          client_id: client.id,
          client_id_issued_at: Math.floor(now / 1000),
          client_name: client.name,
          redirect_uris: client.redirectUris,
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none' as const,
        });
      },
    });

    app.route({
      ...declared('oauthAuthorizeInfo'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => consentInfo(await checkRequest(request.query), request.query.redirect_uri, resource),
    });

    app.route({
      ...declared('oauthApprove'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        const q = request.body;
        await checkRequest(q);
        const code = await oauthRepository.createCode(
          db,
          { clientId: q.client_id, userId: userIdOf(request), redirectUri: q.redirect_uri, codeChallenge: q.code_challenge, resource },
          clock.now(),
        );
        return { redirect: approvalRedirect(q.redirect_uri, code, q.state, base) };
      },
    });

    app.route({
      ...declared('oauthToken'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        const b = request.body;
        reply.header('cache-control', 'no-store');
        if (!resourceAccepted(b.resource, resource)) return oauthError(reply, { error: 'invalid_target', error_description: `resource must be ${resource}` });
        /** A reuse is refused as any spent grant is, and what it revoked is logged: someone else held the code or token. */
        const answer = (out: GrantOutcome, what: string) => {
          if (out.kind === 'issued') return out.tokens;
          if (out.kind === 'reused') {
            request.log.warn({ client_id: b.client_id, revoked: out.revoked }, `oauth: a spent ${what} was used again; its grant is revoked`);
            return oauthError(reply, { error: 'invalid_grant', error_description: `the ${what} was already used; every token issued from it is revoked` });
          }
          return oauthError(reply, { error: 'invalid_grant', error_description: out.description });
        };
        if (b.grant_type === 'authorization_code') {
          if (!b.code || !b.code_verifier || !b.client_id || !b.redirect_uri)
            return oauthError(reply, { error: 'invalid_request', error_description: 'code, code_verifier, client_id and redirect_uri are required' });
          const ask = { code: b.code, verifier: b.code_verifier, clientId: b.client_id, redirectUri: b.redirect_uri, resource };
          return answer(await exchangeCode(db, ask, clock.now()), 'code');
        }
        if (b.grant_type === 'refresh_token') {
          if (!b.refresh_token) return oauthError(reply, { error: 'invalid_request', error_description: 'refresh_token is required' });
          return answer(await refreshGrant(db, { refreshToken: b.refresh_token, clientId: b.client_id, resource }, clock.now()), 'refresh token');
        }
        return oauthError(reply, { error: 'unsupported_grant_type', error_description: 'grant_type must be authorization_code or refresh_token' });
      },
    });

    app.route({
      ...declared('oauthRevoke'),
      config: { auth: AUTH.public },
      handler: async (request) => {
        await revokeByToken(db, request.body.token, clock.now());
        return {};
      },
    });

    app.route({
      ...declared('listOauthTokens'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => ({ tokens: await oauthRepository.userTokens(db, userIdOf(request)) }),
    });

    app.route({
      ...declared('revokeOauthToken'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        if (!(await revokeUsersToken(db, userIdOf(request), request.params.id, clock.now()))) throw new ServiceError('not_found', 'no such token');
        return reply.code(204).send(null);
      },
    });
  };
}
