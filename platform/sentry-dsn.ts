import { TOKEN_PREFIX } from '../schemas/scopes.ts';

/**
 * Sentry DSNs for ingest keys (issue 15): `http(s)://<public key>@<host>/<project number>`. Sentry's SDKs accept
 * only word characters as the DSN's public key and only digits as its project id, so the public key is the ingest
 * token's 256 random bits in hex (the same secret, spelled differently: a DSN is an ingest key, write-only like
 * one) and the project id is the project's number. Tokens are stored only as hashes, so a DSN is shown once, with
 * its key.
 */
const PUBLIC_KEY = /^[0-9a-f]{64}$/;

/** The DSN's public key for an ingest token (`cak_live_...`). */
export function dsnPublicKey(ingestToken: string): string {
  return Buffer.from(ingestToken.slice(TOKEN_PREFIX.ingestKey.length), 'base64url').toString('hex');
}

/**
 * The ingest token a Sentry SDK's `sentry_key` stands for: a DSN public key, or an ingest token sent as it is.
 * '' when it is neither (the edge answers 401 as for any unknown key).
 */
export function ingestTokenOfSentryKey(sentryKey: string): string {
  if (PUBLIC_KEY.test(sentryKey)) return TOKEN_PREFIX.ingestKey + Buffer.from(sentryKey, 'hex').toString('base64url');
  return sentryKey.startsWith(TOKEN_PREFIX.ingestKey) ? sentryKey : '';
}

/** The DSN of an ingest token for a project number, on the service's public base URL. */
export function ingestDsn(ingestToken: string, projectNumber: string | number, publicBaseUrl: string): string {
  const base = new URL(publicBaseUrl);
  const prefix = base.pathname.replace(/\/+$/, '');
  return `${base.protocol}//${dsnPublicKey(ingestToken)}@${base.host}${prefix}/${projectNumber}`;
}
