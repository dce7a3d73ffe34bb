import { createHash } from 'node:crypto';
import type { AuthorizeInfo } from '../../schemas/api/oauth.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';

/**
 * The rules of the MCP endpoint's OAuth (issue 27, 38), as pure functions: which redirect URIs a client may register,
 * what a client's name may show, what a client ID metadata document must say, PKCE S256, when a code or a refresh
 * token is refused, and what the metadata and the consent page read. oauth-routes.ts and oauth-grants.ts apply them.
 */
export const CODE_MS = 60_000;
export const ACCESS_MS = 60 * 60_000;
export const REFRESH_MS = 30 * 24 * 60 * 60_000;
/** How many redirect URIs a client ID metadata document is taken with. */
const DOCUMENT_REDIRECTS = 10;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A client as the authorization reads it: registered here, or from its metadata document. */
export interface OAuthClient {
  id: string;
  name: string;
  redirectUris: string[];
}

/** An OAuth error answer's body (RFC 6749 §5.2), sent with 400. */
export interface OAuthFailure {
  error: string;
  error_description: string;
}

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

/** A redirect URI a client may register: https, or http on loopback (a local app); no fragment, no credentials. */
export function redirectAllowed(raw: string): boolean {
  try {
    const u = new URL(raw);
    if (u.hash || u.username || u.password) return false;
    return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.has(u.hostname));
  } catch {
    return false;
  }
}

/** What the MCP endpoint's tokens are bound to: `<base>/v1/mcp`. */
export const mcpResource = (base: string) => `${base}${ROUTES.mcpPost.path}`;

/** A `resource` the client named (RFC 8707) is this service's MCP endpoint, a trailing slash aside; none is fine too. */
export const resourceAccepted = (asked: string | undefined, resource: string) => asked === undefined || asked.replace(/\/+$/, '') === resource;

/** The authorization server's metadata (RFC 8414): PKCE S256 only, public clients, code and refresh. */
export function serverMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}${ROUTES.oauthToken.path}`,
    registration_endpoint: `${base}${ROUTES.oauthRegister.path}`,
    revocation_endpoint: `${base}${ROUTES.oauthRevoke.path}`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: ['mcp'],
    client_id_metadata_document_supported: true,
  };
}

/** Why a dynamic registration (RFC 7591) is refused, or null: only public clients, with redirect URIs we allow. */
export function registrationRefusal(b: { redirect_uris: string[]; token_endpoint_auth_method?: string }): OAuthFailure | null {
  if (!b.redirect_uris.every(redirectAllowed))
    return { error: 'invalid_redirect_uri', error_description: 'redirect URIs must be https, or http on localhost/127.0.0.1/[::1], without a fragment' };
  if (b.token_endpoint_auth_method && b.token_endpoint_auth_method !== 'none')
    return { error: 'invalid_client_metadata', error_description: 'only public clients (token_endpoint_auth_method none, with PKCE) are registered' };
  return null;
}

/** A client ID metadata document's client (its id is the URL it was read from), or why it cannot be one. */
export function documentClient(url: string, json: unknown): OAuthClient | string {
  const doc: { client_id?: unknown; client_name?: unknown; redirect_uris?: unknown } = typeof json === 'object' && json !== null ? json : {};
  const uris = Array.isArray(doc.redirect_uris)
    ? doc.redirect_uris.filter((u): u is string => typeof u === 'string' && redirectAllowed(u)).slice(0, DOCUMENT_REDIRECTS)
    : [];
  if (doc.client_id !== url || !uris.length) return 'the metadata document must name this client_id and at least one allowed redirect URI';
  const name = (typeof doc.client_name === 'string' && displayName(doc.client_name)) || new URL(url).host;
  return { id: url, name, redirectUris: uris };
}

/** A client_id that is an https URL names its metadata document; any other is one registered here. */
export const isDocumentClientId = (id: string) => id.startsWith('https://');

/** Why an authorization request is refused, or null: the client registered this redirect URI and asks for this resource. */
export function authorizeRefusal(client: OAuthClient, q: { redirect_uri: string; resource?: string }, resource: string): string | null {
  if (!client.redirectUris.includes(q.redirect_uri)) return 'redirect_uri is not one the client registered';
  if (!resourceAccepted(q.resource, resource)) return `resource must be ${resource}`;
  return null;
}

/**
 * Who asks, for the consent page: a dynamically registered client is unverified (anyone may register any name); a
 * metadata document's client is vouched for by the host that serves its document. The redirect's host is shown.
 */
export function consentInfo(client: OAuthClient, redirectUri: string, resource: string): AuthorizeInfo {
  const fromDocument = isDocumentClientId(client.id);
  const redirect = new URL(redirectUri);
  return {
    client: {
      id: client.id,
      name: displayName(client.name),
      registration: fromDocument ? 'metadata_document' : 'dynamic',
      unverified: !fromDocument,
      documentHost: fromDocument ? new URL(client.id).host : null,
    },
    redirectHost: redirect.host,
    redirectUri: redirect.href,
    redirectLoopback: LOOPBACK.has(redirect.hostname),
    resource,
  };
}

/** Where an approval sends the browser: the redirect URI with the code, the client's state and the issuer (RFC 9207). */
export function approvalRedirect(redirectUri: string, code: string, state: string | undefined, issuer: string): string {
  const to = new URL(redirectUri);
  to.searchParams.set('code', code);
  if (state !== undefined) to.searchParams.set('state', state);
  to.searchParams.set('iss', issuer);
  return to.href;
}

/** PKCE S256 (RFC 7636 §4.6): the verifier's SHA-256, base64url, is the challenge. */
export const pkceMatches = (verifier: string, challenge: string) => createHash('sha256').update(verifier).digest('base64url') === challenge;

/** Why a code's first exchange is refused, or null: unexpired, this client and redirect URI, and the verifier matches. */
export function codeRefusal(
  code: { client_id: string; redirect_uri: string; code_challenge: string; expires_at: Date | string },
  ask: { verifier: string; clientId: string; redirectUri: string },
  now: number,
): string | null {
  if (new Date(code.expires_at).getTime() < now) return 'the code is unknown, used or expired';
  if (code.client_id !== ask.clientId || code.redirect_uri !== ask.redirectUri) return 'the code was issued to another client or redirect_uri';
  if (!pkceMatches(ask.verifier, code.code_challenge)) return 'code_verifier does not match the code_challenge (S256)';
  return null;
}

/** Why a refresh token's first use is refused, or null: unexpired, and (when the client names itself) its own. */
export function refreshRefusal(token: { client_id: string; refresh_expires_at: Date | string }, ask: { clientId?: string }, now: number): string | null {
  if (new Date(token.refresh_expires_at).getTime() < now) return 'the refresh token is unknown, used, revoked or expired';
  if (ask.clientId !== undefined && ask.clientId !== token.client_id) return 'the refresh token belongs to another client';
  return null;
}
