import type { OutboundUrlGuard, OutboundUse } from '../../ports/outbound-url-guard.ts';
import { checkResolvedHost, guardedLookup, parseWebhookUrl, systemResolver, type GuardOptions, type Resolver } from './url-rules.ts';
import { hostOf } from '../../ports/outbound-url-guard.ts';

/**
 * The guard production runs: only globally routable unicast, for every use. `allowLocal` (ALLOW_LOCAL_OUTBOUND, or its
 * alias ALLOW_LOCAL_WEBHOOKS: a developer trying the service on one machine) lets the targets a tenant names and a
 * developer tries locally, webhook endpoints and uptime monitors, be http:// and loopback; private ranges and
 * link-local metadata addresses stay refused, and repositories, builds' egress and provider APIs stay public-only.
 */
export const LOCAL_USES: readonly OutboundUse[] = ['webhook', 'uptime'];

export function createPublicInternetGuard(opts: { allowLocal?: boolean; resolve?: Resolver } = {}): OutboundUrlGuard {
  const local = opts.allowLocal === true;
  return guardWith((use) => (local && LOCAL_USES.includes(use) ? { allowLoopback: true, allowHttp: true } : {}), opts.resolve ?? systemResolver);
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
