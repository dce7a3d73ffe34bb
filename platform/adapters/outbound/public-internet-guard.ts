import type { OutboundUrlGuard, OutboundUse } from '../../ports/outbound-url-guard.ts';
import { checkResolvedHost, guardedLookup, parseWebhookUrl, systemResolver, type GuardOptions, type Resolver } from './url-rules.ts';
import { hostOf } from '../../ports/outbound-url-guard.ts';

/**
 * The guard production runs: only globally routable unicast, for every use. `allowLocalWebhooks`
 * (ALLOW_LOCAL_WEBHOOKS, a developer trying webhooks on one machine) lets webhook endpoints be http:// and loopback
 * receivers; private ranges and link-local metadata addresses stay refused, and repositories and builds' egress
 * stay public-only.
 */
export function createPublicInternetGuard(opts: { allowLocalWebhooks?: boolean; resolve?: Resolver } = {}): OutboundUrlGuard {
  const local = opts.allowLocalWebhooks === true;
  return guardWith((use) => (use === 'webhook' && local ? { allowLoopback: true, allowHttp: true } : {}), opts.resolve ?? systemResolver);
}

/** A guard from the relaxations each use gets (the rules themselves are url-rules.ts). */
export function guardWith(relaxations: (use: OutboundUse) => GuardOptions, resolve: Resolver, extraCa?: string | Buffer): OutboundUrlGuard {
  const options = (use: OutboundUse) => ({ ...relaxations(use), resolve });
  return {
    parseUrl: (raw, use) => parseWebhookUrl(raw, options(use)),
    async checkUrl(raw, use) {
      const url = parseWebhookUrl(raw, options(use));
      await checkResolvedHost(hostOf(url), options(use));
      return url;
    },
    resolveHost: (host, use) => checkResolvedHost(host.replace(/^\[(.*)\]$/, '$1'), options(use)),
    lookup: (use) => guardedLookup(options(use)),
    extraCa,
  };
}
