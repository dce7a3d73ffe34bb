import { publicBaseUrl, type Config } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { type ClientAddress, createHostLookup, type HostLookupOptions, type HostStats, type Site } from '../../platform/sites/host-lookup.ts';
import { serviceHostRule } from '../../platform/sites/service-hosts.ts';
import { createDeployFiles } from './deploy-files.ts';
import { AUTH_BODY_MAX, createPreviewGate, type GateRefusal, privateAnswer } from './preview-gate.ts';
import { type RequestHeaders, type ServeOptions, type SiteResponse, serveRequest } from './serve-request.ts';

/**
 * Sites: a ready deploy's output, served as a static site by Host (issue 14 "Hosting", issue 42 "Serving"). Which
 * site a Host names is platform/sites/host-lookup.ts; what a request to it answers is serve-request.ts (rules,
 * clean URLs, validators, ranges, encodings), from the deploy's files and compiled rules (deploy-files.ts).
 *
 * One implementation for whoever is the front door: the edge in the single process (ingest/), the API behind a
 * proxy (api/sites/). In the single process the edge and the API share one site server (siteServerOf), so a Host
 * the edge found no site is not looked up again when the request is relayed.
 */
export type { ClientAddress, Site, HostStats } from '../../platform/sites/host-lookup.ts';
export { addressKey, MISS_CACHE_MAX, SITE_CACHE_MAX, UNKNOWN_HOST_LOOKUPS } from '../../platform/sites/host-lookup.ts';
export { isSourceMap } from './deploy-files.ts';
export type { RequestHeaders, SiteResponse } from './serve-request.ts';
export { AUTH_BODY_MAX, AUTH_PATH } from './preview-gate.ts';

/** A site as the front doors pass it: a protected one (`protection`, a per-deploy host) goes through the gate first. */
export type ServedSite = ServeOptions & Partial<Pick<Site, 'projectId' | 'protection'>>;

/** What the gate of a protected host reads besides the headers: the form's body (at most AUTH_BODY_MAX) and who asks. */
export interface ServeExtra {
  body?: Buffer;
  /** Read only for a protected site (its gate limits password tries per address). */
  clientIp?: ClientAddress;
}

export interface SiteServer {
  /**
   * The site a Host names, or undefined when the Host is not a site. `clientIp`: who asks; a query for a Host not
   * known as a site costs it one of UNKNOWN_HOST_LOOKUPS (without one, nothing is counted: internal callers).
   */
  lookup(host: string, clientIp?: ClientAddress): Promise<Site | undefined>;
  /**
   * The answer for one request to a site; a `.map` is served only when the site opted in (`site.serveSourceMaps`);
   * a `limited` lookup is 429 rate_limited. `headers`: the request's (conditional requests, Range, Accept-Encoding,
   * Cookie). A protected site (`site.protection`) answers its password page unless the request's cookie opens it
   * (preview-gate.ts); `extra.body` is read only for its password form.
   */
  serve(root: string, method: string, url: string, site?: ServedSite, headers?: RequestHeaders, extra?: ServeExtra): Promise<SiteResponse>;
}

export type SiteServerOptions = HostLookupOptions;

type ConfiguredSiteServer = ReturnType<typeof createSiteServer>;
const perPlatform = new WeakMap<object, ConfiguredSiteServer>();

/**
 * The site server of a configured service: the service's own hosts are never a site. One per platform, so the
 * single process's edge and API share its caches (a Host the edge found no site is not looked up again by the API).
 */
export function siteServerOf(platform: Pick<Platform, 'db' | 'limiter'> & { config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT' | 'SITES_DOMAIN' | 'DATA_DIR'> }) {
  let sites = perPlatform.get(platform);
  if (!sites) {
    const { config } = platform;
    sites = createSiteServer(platform.db, {
      sitesDomain: config.SITES_DOMAIN,
      dataDir: config.DATA_DIR,
      reserved: serviceHostRule(config),
      ownHost: new URL(publicBaseUrl(config)).hostname.toLowerCase(),
      limiter: platform.limiter,
    });
    perPlatform.set(platform, sites);
  }
  return sites;
}

export function createSiteServer(
  db: Queryable,
  sitesDomainOrOptions: string | SiteServerOptions,
): SiteServer & {
  readonly cacheStats: { entries: number; bytes: number };
  readonly hostStats: HostStats;
  readonly protectionStats: Record<GateRefusal, number>;
} {
  const o: SiteServerOptions = typeof sitesDomainOrOptions === 'string' ? { sitesDomain: sitesDomainOrOptions } : sitesDomainOrOptions;
  const hosts = createHostLookup(db, o);
  const files = createDeployFiles();
  const gate = createPreviewGate({ db, limiter: o.limiter });
  return {
    get protectionStats() {
      return gate.stats;
    },
    get cacheStats() {
      return files.stats;
    },
    get hostStats() {
      return hosts.stats;
    },
    lookup(host, clientIp) {
      return hosts.lookup(host.toLowerCase().replace(/:\d+$/, ''), clientIp);
    },
    async serve(root, method, url, site, headers = {}, extra = {}) {
      if (site?.protection && site.projectId && !site.limited) {
        const host = String(headers.host ?? '')
          .toLowerCase()
          .replace(/:\d+$/, '');
        const body = extra.body && extra.body.length > AUTH_BODY_MAX ? extra.body.subarray(0, AUTH_BODY_MAX) : extra.body;
        const refused = await gate.check(site.projectId, site.protection, {
          host,
          method,
          url,
          headers,
          body,
          clientIp: typeof extra.clientIp === 'function' ? extra.clientIp() : extra.clientIp,
        });
        if (refused) return refused;
        return privateAnswer(await serveRequest(files, root, method, url, site, headers));
      }
      return serveRequest(files, root, method, url, site, headers);
    },
  };
}
