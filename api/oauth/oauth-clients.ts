import { guardedGet } from '../../platform/guarded-get.ts';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { oauthRepository } from './oauth-repository.ts';
import { documentClient, isDocumentClientId, type OAuthClient } from './oauth-rules.ts';

/** A client ID metadata document is read through the outbound guard, this long and this large at most. */
const DOCUMENT_TIMEOUT_MS = 5000;
const DOCUMENT_MAX_BYTES = 64 * 1024;

/**
 * The client an authorization names: one registered here (RFC 7591), or a client ID metadata document (the MCP
 * authorization spec's preferred registration: the client_id is an https URL whose JSON names the client and its
 * redirect URIs), fetched through the outbound guard (public addresses only, no redirects) at each authorization and
 * remembered for the token endpoint. Undefined for an unknown registered id; a document that cannot be read or is not
 * a client's is 400 invalid_request.
 */
export async function authorizingClient(platform: Pick<Platform, 'db' | 'clock' | 'outbound'>, clientId: string): Promise<OAuthClient | undefined> {
  if (!isDocumentClientId(clientId)) return oauthRepository.client(platform.db, clientId);
  let doc: unknown;
  try {
    const r = await guardedGet(clientId, {
      guard: platform.outbound,
      use: 'provider_api',
      headers: { accept: 'application/json' },
      timeoutMs: DOCUMENT_TIMEOUT_MS,
      maxBytes: DOCUMENT_MAX_BYTES,
    });
    if (r.status !== 200) throw new Error(`HTTP ${r.status}`);
    doc = JSON.parse(r.body.toString('utf8'));
  } catch (err) {
    throw new ServiceError('invalid_request', `the client ID metadata document could not be read: ${(err as Error).message}`);
  }
  const client = documentClient(clientId, doc);
  if (typeof client === 'string') throw new ServiceError('invalid_request', client);
  await oauthRepository.rememberDocumentClient(platform.db, client, platform.clock.now());
  return client;
}
