import path from 'node:path';
import type { Queryable } from '../ports/relational-store.ts';
import type { RateLimiter } from '../ports/rate-limiter.ts';
import { sitesRepository, type SiteRow } from './sites-repository.ts';

/**
 * Which site a Host names (issue 14 "Hosting", issue 38 row 9), for the site server (hosting/serve/site-server.ts):
 * - `<slug>.<SITES_DOMAIN>` and the project's verified custom domains: the live production deploy;
 * - `<deploy-id>.<SITES_DOMAIN>` (the id with `-` for `_`): that deploy, production or preview, once ready; when its
 *   project protects its previews (issue 42) the Site carries `protection`, which hosting/serve/preview-gate.ts
 *   enforces. The production hosts above never do.
 * A Host's site is kept for SITE_CACHE_MS: a rollback or a new live deploy shows within it. A Host that is no site
 * costs nothing twice, and a stranger cannot make every request a query:
 * - the service's own hosts, IP addresses in any form, names no DNS name could be and malformed names under
 *   SITES_DOMAIN are not sites by rule, before any query;
 * - an unknown Host (no site, or a name under SITES_DOMAIN that no project has) is cached as a miss for
 *   SITE_CACHE_MS, in a cache of MISS_CACHE_MAX entries that forgets its least recently used (a flood of distinct
 *   names evicts itself, never the sites); a Host that served a site stays known (SITE_CACHE_MAX entries) and is
 *   looked up again after SITE_CACHE_MS at no charge;
 * - each query for a Host not known as a site costs the client's address (IPv6: its /64) one hit of
 *   UNKNOWN_HOST_LOOKUPS on the rate limiter; past it the answer is 429 rate_limited, with no query; one query per
 *   Host at a time, whoever asks.
 */
/**
 * A Host that is a site: its project (null for a name under SITES_DOMAIN that no project or deploy has), and the
 * artifact directory it serves ('' while nothing is ready there).
 */
export interface Site {
  projectId: string | null;
  dir: string;
  /** The project opted in to serving its `*.map` files (projects.serve_source_maps; off by default). */
  serveSourceMaps: boolean;
  /**
   * A per-deploy host (`dep-…`) of a project whose previews are protected (hosting/serve/preview-gate.ts); never
   * set on a production host (the project's own or a custom domain).
   */
  protection?: PreviewProtection;
  /** Not looked up: the client is past its unknown-Host lookups (UNKNOWN_HOST_LOOKUPS); served as 429. */
  limited?: { retryAfterSec: number };
  /**
   * A custom domain that serves its project's status page (issue 43), not files: the project's slug. The API answers
   * it (api/sites/site-hosting.ts); the edge relays it there.
   */
  statusSlug?: string;
}

/** What guards a protected per-deploy host: the password's hash and version, the cookie key, the live share links. */
export interface PreviewProtection {
  passwordHash: string | null;
  passwordVersion: number;
  key: string;
  linkIds: string[];
}

/** Lookups of Hosts not known as sites, per client address (IPv6: per /64) per window. */
export const UNKNOWN_HOST_LOOKUPS = { perAddress: 60, windowMs: 60_000 };
/** A Host that could name a site: a DNS name's characters and length (punycode for international names). */
const SITE_HOSTNAME = /^[a-z0-9.-]{1,253}$/;
/** Hosts remembered as no site. */
export const MISS_CACHE_MAX = 10_000;

export const SITE_CACHE_MS = 2_000;
/** Hosts remembered as sites (known: refreshed after SITE_CACHE_MS at no charge). */
export const SITE_CACHE_MAX = 10_000;

/** The Host caches and what the lookups cost (for tests and the bench). */
export interface HostStats {
  known: number;
  misses: number;
  inflight: number;
  /** Queries run, lookups refused by UNKNOWN_HOST_LOOKUPS, limiter failures (the query went ahead). */
  queries: number;
  limited: number;
  limiterErrors: number;
}

/**
 * A map that forgets its least recently used entries past a count and a byte budget (Map keeps insertion order;
 * a hit moves the entry to the end).
 */
export function boundedCache<V>(maxEntries: number, maxBytes: number) {
  const entries = new Map<string, { value: V; cost: number }>();
  let bytes = 0;
  return {
    get(key: string): V | undefined {
      const e = entries.get(key);
      if (!e) return undefined;
      entries.delete(key);
      entries.set(key, e);
      return e.value;
    },
    set(key: string, value: V, cost: number): void {
      const old = entries.get(key);
      if (old) {
        bytes -= old.cost;
        entries.delete(key);
      }
      entries.set(key, { value, cost });
      bytes += cost;
      for (const [k, e] of entries) {
        if (entries.size <= maxEntries && bytes <= maxBytes) break;
        entries.delete(k);
        bytes -= e.cost;
      }
    },
    delete(key: string): void {
      const e = entries.get(key);
      if (!e) return;
      entries.delete(key);
      bytes -= e.cost;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}

/** Who asks: an address, or how to read it when needed (reading a socket's address costs a few microseconds). */
export type ClientAddress = string | (() => string);

export interface HostLookupOptions {
  sitesDomain: string;
  /** Hosts that are the service's own (service-hosts.ts): never a site, whatever the database says. */
  reserved?: (hostname: string) => string | undefined;
  /** The PUBLIC_BASE_URL host: the API and console answer there even when it lies under SITES_DOMAIN. */
  ownHost?: string;
  /**
   * DATA_DIR: a deploy's stored artifact directory is relative to it (`artifacts/<deployId>`), so a data directory
   * moved or restored elsewhere still serves its sites. An absolute one (a test's) is served as it is.
   */
  dataDir?: string;
  /** Counts lookups of Hosts not known as sites per client address (UNKNOWN_HOST_LOOKUPS); none: not limited. */
  limiter?: Pick<RateLimiter, 'hit'>;
}

/** The rate-limit key of a client address: IPv4 (an IPv4-mapped IPv6 too) as it is, IPv6 by its /64 (one subscriber's). */
export function addressKey(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (v4) return v4[1]!;
  if (!ip.includes(':')) return ip;
  const bare = ip.replace(/%.*$/, '').toLowerCase();
  const [head = '', tail = ''] = bare.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = bare.includes('::') ? [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/** Which site a Host names: the rules, the Host caches, one query per Host at a time, the unknown-Host budget. */
export function createHostLookup(db: Queryable, o: HostLookupOptions) {
  const suffix = `.${o.sitesDomain.toLowerCase()}`;
  type HostEntry = { site: Site | undefined; at: number };
  /** Hosts that served a site (a project's): refreshed after SITE_CACHE_MS without charge. */
  const known = boundedCache<HostEntry>(SITE_CACHE_MAX, Number.POSITIVE_INFINITY);
  /** Hosts that are no site (or a name under SITES_DOMAIN no project has): a fresh entry answers without a query. */
  const misses = boundedCache<HostEntry>(MISS_CACHE_MAX, Number.POSITIVE_INFINITY);
  /** One query per Host at a time: a burst for the same Host waits for the first. */
  const inflight = new Map<string, Promise<Site | undefined>>();
  const counts = { queries: 0, limited: 0, limiterErrors: 0 };
  const dataDir = path.resolve(o.dataDir ?? '.');
  const site = (row: SiteRow | undefined): Site => ({
    projectId: row?.project_id ?? null,
    dir: row?.artifact_dir ? path.resolve(dataDir, row.artifact_dir) : '',
    serveSourceMaps: row?.serve_source_maps === true,
    ...(row?.status_slug && { statusSlug: row.status_slug }),
    ...(row?.preview_protection === true && {
      protection: {
        passwordHash: row.preview_password_hash ?? null,
        passwordVersion: Number(row.preview_password_version ?? 0),
        // No key yet (set when protection is turned on): no cookie verifies, and none is issued (the gate says so).
        key: row.preview_key ?? '',
        linkIds: row.preview_link_ids ?? [],
      },
    }),
  });

  /** The query that resolves a Host, or undefined when the Host is no site by rule (no query needed). */
  function plan(hostname: string): (() => Promise<Site | undefined>) | undefined {
    // No site's name is longer than a DNS name or holds other characters (domains are claimed as such, slugs and
    // deploy ids are too): such a Host is never queried nor cached, so a cached miss costs at most 253 bytes.
    if (!SITE_HOSTNAME.test(hostname)) return undefined;
    if (hostname === o.ownHost) return undefined;
    if (hostname.endsWith(suffix)) {
      const label = hostname.slice(0, -suffix.length);
      if (!label || label.includes('.')) return undefined;
    } else if (o.reserved?.(hostname)) return undefined;
    return () => resolve(hostname);
  }

  async function resolve(hostname: string): Promise<Site | undefined> {
    counts.queries++;
    if (hostname.endsWith(suffix)) {
      const label = hostname.slice(0, -suffix.length);
      if (label.startsWith('dep-')) {
        return site(await sitesRepository.ofDeploy(db, label.replace(/-/g, '_')));
      }
      return site(await sitesRepository.ofSlug(db, label));
    }
    // A custom domain serves only once its project proved control of it (api/domains/).
    const row = await sitesRepository.ofDomain(db, hostname);
    return row && site(row);
  }

  /**
   * A Host's site: from the caches while fresh, else one query (charged to `clientIp` unless the Host is known).
   * `clientIp` may be a function: the address is then read only when a lookup is charged (a cached Host never asks).
   */
  async function lookupHost(hostname: string, clientIp: ClientAddress | undefined): Promise<Site | undefined> {
    const query = plan(hostname);
    if (!query) return undefined;
    const now = Date.now();
    const cached = known.get(hostname) ?? misses.get(hostname);
    if (cached && now - cached.at < SITE_CACHE_MS) return cached.site;
    let pending = inflight.get(hostname);
    if (pending !== undefined) return pending;
    if (!cached?.site?.projectId && clientIp !== undefined && o.limiter) {
      const decision = await o.limiter
        .hit(
          `site-host-lookups:${addressKey(typeof clientIp === 'function' ? clientIp() : clientIp)}`,
          UNKNOWN_HOST_LOOKUPS.perAddress,
          UNKNOWN_HOST_LOOKUPS.windowMs,
        )
        .catch(() => {
          // The limiter away (Redis): the site still serves; the query goes ahead, counted.
          counts.limiterErrors++;
          return undefined;
        });
      if (decision && !decision.allowed) {
        counts.limited++;
        return { projectId: null, dir: '', serveSourceMaps: false, limited: { retryAfterSec: decision.retryAfterSec } };
      }
      pending = inflight.get(hostname);
      if (pending !== undefined) return pending;
    }
    pending = query()
      .then((found) => {
        const entry = { site: found, at: Date.now() };
        if (found?.projectId) {
          known.set(hostname, entry, 1);
          misses.delete(hostname);
        } else {
          misses.set(hostname, entry, 1);
          if (cached) known.delete(hostname);
        }
        return found;
      })
      .finally(() => inflight.delete(hostname));
    inflight.set(hostname, pending);
    return pending;
  }

  return {
    lookup: lookupHost,
    get stats(): HostStats {
      return { known: known.size, misses: misses.size, inflight: inflight.size, ...counts };
    },
  };
}
