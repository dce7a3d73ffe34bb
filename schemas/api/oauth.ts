import { z } from 'zod';
import { errorAnswers, NoContent } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * OAuth 2.1 for the MCP endpoint (issue 27; the MCP authorization specification, 2025-11-25): the authorization
 * server's metadata (RFC 8414), dynamic client registration (RFC 7591; public clients, PKCE S256 required), the
 * console's consent, the token endpoint (authorization_code, refresh_token) and revocation (RFC 7009).
 */
export const RegisterClientBody = z
  .object({
    client_name: z.string().trim().min(1).max(100).optional(),
    redirect_uris: z.array(z.string().max(2048)).min(1).max(10),
    grant_types: z.array(z.string().max(100)).max(5).optional(),
    response_types: z.array(z.string().max(100)).max(5).optional(),
    token_endpoint_auth_method: z.string().max(100).optional(),
    scope: z.string().max(500).optional(),
  })
  .passthrough();
export const RegisteredClient = z.object({
  client_id: z.string(),
  client_id_issued_at: z.number().int(),
  client_name: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  token_endpoint_auth_method: z.literal('none'),
});
export type RegisteredClient = z.infer<typeof RegisteredClient>;

export const AuthorizeQuery = z.object({
  client_id: z.string().min(1).max(2048).describe('a registered oac_... id, or the https URL of a client ID metadata document'),
  redirect_uri: z.string().min(1).max(2048),
  code_challenge: z.string().min(43).max(128),
  code_challenge_method: z.literal('S256'),
  response_type: z.literal('code'),
  state: z.string().max(1000).optional(),
  resource: z.string().max(2048).optional(),
  scope: z.string().max(500).optional(),
});
export type AuthorizeRequest = z.infer<typeof AuthorizeQuery>;
/**
 * Who asks, for the consent page. A client's name is its own word: `unverified` is true for a dynamically registered
 * client (anyone may register any name); a client ID metadata document's name is vouched for only by the host that
 * serves it (`documentHost`). `redirectHost` is where the person's browser goes with the code, shown prominently.
 */
export const AuthorizeInfo = z.object({
  client: z.object({
    id: z.string(),
    name: z.string(),
    registration: z.enum(['dynamic', 'metadata_document']),
    unverified: z.boolean(),
    documentHost: z.string().nullable(),
  }),
  redirectHost: z.string(),
  redirectUri: z.string(),
  redirectLoopback: z.boolean().describe('the redirect goes to this computer (localhost, 127.0.0.1, [::1]): a local app'),
  resource: z.string(),
});
export type AuthorizeInfo = z.infer<typeof AuthorizeInfo>;
export const AuthorizeAnswer = z.object({ redirect: z.string().describe('where the browser goes next: the client with ?code=&state=') });
export type AuthorizeAnswer = z.infer<typeof AuthorizeAnswer>;

export const TokenBody = z
  .object({
    grant_type: z.string().max(100),
    code: z.string().max(200).optional(),
    redirect_uri: z.string().max(2048).optional(),
    client_id: z.string().max(100).optional(),
    code_verifier: z.string().max(200).optional(),
    refresh_token: z.string().max(200).optional(),
    resource: z.string().max(2048).optional(),
  })
  .passthrough();
export const TokenAnswer = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  refresh_token: z.string(),
  scope: z.string().optional(),
});
export const OAuthError = z.object({ error: z.string(), error_description: z.string().optional() });
export const RevokeBody = z.object({ token: z.string().max(200), token_type_hint: z.string().max(100).optional() }).passthrough();

export const McpTokenSchema = z.object({ id: z.string(), client: z.string(), createdAt: z.string(), expiresAt: z.string(), lastUsedAt: z.string().nullable() });
export const McpTokenList = z.object({ tokens: z.array(McpTokenSchema) });
export type McpTokenList = z.infer<typeof McpTokenList>;
export const McpTokenParams = z.object({ id: z.string().max(64) });

const tags = ['oauth'];

/** The family's routes (paths in route-table.ts). */
export const oauthRoutes = routeShapes({
  oauthServerMetadata: { tags, summary: 'OAuth authorization server metadata (RFC 8414)' },
  oauthRegister: {
    tags,
    summary: 'Register a public OAuth client (RFC 7591)',
    body: RegisterClientBody,
    response: { 201: RegisteredClient, 400: OAuthError, ...errorAnswers(429) },
  },
  oauthAuthorizeInfo: {
    tags,
    summary: 'Who asks for access (the console consent page reads it)',
    // The consent page passes on the MCP client's whole authorization request, and an authorization server ignores
    // the parameters it does not know (RFC 6749 §3.1): a client's own (prompt, nonce, ...) are not refused.
    querystring: AuthorizeQuery.passthrough(),
    response: { 200: AuthorizeInfo, ...errorAnswers(400) },
  },
  oauthApprove: {
    tags,
    summary: 'Approve: a one-use code for the client, sent to its redirect URI',
    body: AuthorizeQuery,
    response: { 200: AuthorizeAnswer, ...errorAnswers(400) },
  },
  oauthToken: {
    tags,
    summary: 'Exchange a code (with its PKCE verifier) or a refresh token',
    body: TokenBody,
    response: { 200: TokenAnswer, 400: OAuthError },
  },
  oauthRevoke: { tags, summary: 'Revoke an access or refresh token (RFC 7009; 200 whatever it was)', body: RevokeBody },
  listOauthTokens: { tags, summary: "The signed-in person's MCP tokens", response: { 200: McpTokenList } },
  revokeOauthToken: { tags, summary: 'Revoke one of your MCP tokens', params: McpTokenParams, response: { 204: NoContent, ...errorAnswers(404) } },
});
