import type { LookupAddress } from 'node:dns';
import type net from 'node:net';
import type { ErrorCode } from '../../schemas/error-codes.ts';

/**
 * Every address the service dials on a tenant's behalf passes this guard (spec §2.1, §9: https only, private and
 * loopback hosts refused): webhook endpoints when they are saved and at every attempt's dial, repository URLs, and
 * the destinations of a build's egress proxy. Adapters: the public-internet guard production runs
 * (adapters/outbound/public-internet-guard.ts, with ALLOW_LOCAL_OUTBOUND for a developer's machine), and the tests'
 * guard that also lets loopback stand-ins through (adapters/outbound/test-guard.ts), which no configuration can choose.
 */
/** provider_api: a provider's API the service calls for itself (Resend's received-mail API). uptime: a monitor's checks. */
export type OutboundUse = 'webhook' | 'repository' | 'build_egress' | 'provider_api' | 'uptime';

export type UrlRefusal = Extract<ErrorCode, 'url_not_https' | 'url_has_credentials' | 'url_private_host' | 'url_unresolvable' | 'invalid_request'>;

export class OutboundUrlError extends Error {
  constructor(
    readonly code: UrlRefusal,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundUrlGuard {
  /** The form of a URL for `use` (scheme, no credentials, no literal private host), without DNS. Throws OutboundUrlError. */
  parseUrl(raw: string, use: OutboundUse): URL;
  /** The whole check of a URL a tenant gives: its form, then every address its host resolves to. Throws OutboundUrlError. */
  checkUrl(raw: string, use: OutboundUse): Promise<URL>;
  /** Every address of `host` (a name or an IP literal), when each is allowed for `use`. Throws OutboundUrlError. */
  resolveHost(host: string, use: OutboundUse): Promise<LookupAddress[]>;
  /**
   * A `lookup` for net/tls/https connect options that refuses what resolveHost refuses and hands the socket only
   * checked addresses: the check DNS rebinding cannot get around, because these are the addresses dialled.
   */
  lookup(use: OutboundUse): net.LookupFunction;
  /** Certificate authorities outbound TLS trusts beyond the system's (a test receiver's self-signed one). */
  readonly extraCa?: string | Buffer;
}

/** A URL's host as the guard judges it: without IPv6 brackets or a trailing dot, lower-cased. */
export function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}
