import { constants } from 'node:fs';
import { lstat, open, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../ports/relational-store.ts';
import type { RateLimiter } from '../ports/rate-limiter.ts';
import type { Platform } from '../platform.ts';
import { publicBaseUrl, type Config } from '../config.ts';
import { serviceHostRule } from './service-hosts.ts';
import { sitesRepository, type SiteRow } from './sites-repository.ts';

/**
 * Sites: a ready deploy's output, served as a static site by Host (issue 14 "Hosting"):
 * - `<slug>.<SITES_DOMAIN>` and the project's verified custom domains: the live production deploy
 *   (projects.live_deploy_id: the newest ready production deploy, or a rollback's choice);
 * - `<deploy-id>.<SITES_DOMAIN>` (the id with `-` for `_`): that deploy, production or preview, once ready.
 * A directory serves its `index.html`; a missing file the site's own `404.html` or a plain 404 (a source map, `*.map`,
 * is answered as missing: it carries the tenant's source; a project opts in with projects.serve_source_maps, read
 * with the site's row, so a change applies within SITE_CACHE_MS); content types
 * by extension; long-lived caching only for hashed asset names (`app.3f9a2c1b.css`), revalidation for the rest.
 *
 * One implementation for whoever is the front door: the edge in the single process (ingest/), the API behind
 * a proxy (api/sites/). A deploy's artifact never changes once ready, so small files are kept in memory (a cache
 * bounded by entries and bytes, misses included) and a Host's site for SITE_CACHE_MS: a rollback or a new live
 * deploy shows within it. Larger files are streamed from an open descriptor, never read whole. No link is ever
 * followed out of an artifact (its real path must stay inside it; the final open refuses links), and a custom
 * domain serves only once verified and never when it is one of the service's own hosts.
 *
 * A Host that is no site costs nothing twice, and a stranger cannot make every request a query (issue 38, row 9):
 * - the service's own hosts, IP addresses in any form, names no DNS name could be and malformed names under
 *   SITES_DOMAIN are not sites by rule, before any query;
 * - an unknown Host (no site, or a name under SITES_DOMAIN that no project has) is cached as a miss for
 *   SITE_CACHE_MS, in a cache of MISS_CACHE_MAX entries that forgets its least recently used (a flood of distinct
 *   names evicts itself, never the sites); a Host that served a site stays known (SITE_CACHE_MAX entries) and is
 *   looked up again after SITE_CACHE_MS at no charge;
 * - each query for a Host not known as a site costs the client's address (IPv6: its /64) one hit of
 *   UNKNOWN_HOST_LOOKUPS on the rate limiter; past it the answer is 429 rate_limited, with no query; one query per
 *   Host at a time, whoever asks.
 * In the single process the edge and the API share one site server (siteServerOf), so a Host the edge found no site
 * is not looked up again when the request is relayed.
 */
export type SiteResponse =
  | { status: number; headers: Array<[string, string]>; body: Buffer }
  /** A file too large to keep in memory: streamed from an open descriptor (the front door closes it). */
  | { status: number; headers: Array<[string, string]>; file: FileHandle; size: number };

/**
 * A Host that is a site: its project (null for a name under SITES_DOMAIN that no project or deploy has), and the
 * artifact directory it serves ('' while nothing is ready there).
 */
export interface Site {
  projectId: string | null;
  dir: string;
  /** The project opted in to serving its `*.map` files (projects.serve_source_maps; off by default). */
  serveSourceMaps: boolean;
  /** Not looked up: the client is past its unknown-Host lookups (UNKNOWN_HOST_LOOKUPS); served as 429. */
  limited?: { retryAfterSec: number };
}

export interface SiteServer {
  /**
   * The site a Host names, or undefined when the Host is not a site. `clientIp`: who asks; a query for a Host not
   * known as a site costs it one of UNKNOWN_HOST_LOOKUPS (without one, nothing is counted: internal callers).
   */
  lookup(host: string, clientIp?: string): Promise<Site | undefined>;
  /**
   * The answer for one request to a site; a `.map` is served only when the site opted in (`site.serveSourceMaps`);
   * a `limited` lookup is 429 rate_limited.
   */
  serve(root: string, method: string, url: string, site?: Pick<Site, 'serveSourceMaps' | 'limited'>): Promise<SiteResponse>;
}

/** Lookups of Hosts not known as sites, per client address (IPv6: per /64) per window. */
export const UNKNOWN_HOST_LOOKUPS = { perAddress: 60, windowMs: 60_000 };
/** A Host that could name a site: a DNS name's characters and length (punycode for international names). */
const SITE_HOSTNAME = /^[a-z0-9.-]{1,253}$/;
/** Hosts remembered as no site. */
export const MISS_CACHE_MAX = 10_000;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
};
/** A file name with a content hash in it (`app.3f9a2c1b.js`, `chunk-5d41402a.css`): safe to cache for a year. */
const HASHED_NAME = /[.-][0-9a-f]{8,}\.[a-z0-9]+$/i;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, max-age=0, must-revalidate';
const SITE_CACHE_MS = 2_000;
/** Hosts remembered as sites (known: refreshed after SITE_CACHE_MS at no charge). */
export const SITE_CACHE_MAX = 10_000;
/** Files kept in memory: entries and bytes both bounded; a miss costs MISS_COST bytes, so misses are bounded too. */
const FILE_CACHE_BYTES = 64 * 1024 * 1024;
const FILE_CACHE_ENTRIES = 20_000;
const FILE_CACHE_MAX_FILE = 1024 * 1024;
const MISS_COST = 512;

type CachedFile = { body: Buffer; type: string; cache: string } | null;

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
function boundedCache<V>(maxEntries: number, maxBytes: number) {
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

export interface SiteServerOptions {
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

export function createSiteServer(
  db: Queryable,
  sitesDomainOrOptions: string | SiteServerOptions,
): SiteServer & { readonly cacheStats: { entries: number; bytes: number }; readonly hostStats: HostStats } {
  const o: SiteServerOptions = typeof sitesDomainOrOptions === 'string' ? { sitesDomain: sitesDomainOrOptions } : sitesDomainOrOptions;
  const hosts = createHostLookup(db, o);
  const files = createArtifactFiles();
  return {
    get cacheStats() {
      return files.stats;
    },
    get hostStats() {
      return hosts.stats;
    },
    lookup(host, clientIp) {
      return hosts.lookup(host.toLowerCase().replace(/:\d+$/, ''), clientIp);
    },
    serve: files.serve,
  };
}

/** Which site a Host names: the rules, the Host caches, one query per Host at a time, the unknown-Host budget. */
function createHostLookup(db: Queryable, o: SiteServerOptions) {
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

  /** A Host's site: from the caches while fresh, else one query (charged to `clientIp` unless the Host is known). */
  async function lookupHost(hostname: string, clientIp: string | undefined): Promise<Site | undefined> {
    const query = plan(hostname);
    if (!query) return undefined;
    const now = Date.now();
    const cached = known.get(hostname) ?? misses.get(hostname);
    if (cached && now - cached.at < SITE_CACHE_MS) return cached.site;
    let pending = inflight.get(hostname);
    if (pending !== undefined) return pending;
    if (!cached?.site?.projectId && clientIp !== undefined && o.limiter) {
      const decision = await o.limiter
        .hit(`site-host-lookups:${addressKey(clientIp)}`, UNKNOWN_HOST_LOOKUPS.perAddress, UNKNOWN_HOST_LOOKUPS.windowMs)
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

/** An artifact's files, answered as a static site: links never followed out of it, small files kept in memory. */
function createArtifactFiles() {
  const files = boundedCache<CachedFile>(FILE_CACHE_ENTRIES, FILE_CACHE_BYTES);
  const realRoots = new Map<string, string>();

  async function realRoot(root: string): Promise<string | undefined> {
    let real = realRoots.get(root);
    if (real === undefined) {
      real = await realpath(root).catch(() => '');
      if (realRoots.size >= SITE_CACHE_MAX) realRoots.clear();
      realRoots.set(root, real);
    }
    return real || undefined;
  }

  /**
   * The file a path names inside the artifact, opened without following a link anywhere: the real path must be
   * inside the artifact's real root, and the final open refuses a link (O_NOFOLLOW).
   */
  async function openFile(root: string, absolute: string): Promise<{ handle: FileHandle; size: number; target: string } | undefined> {
    const realRootDir = await realRoot(root);
    if (!realRootDir) return undefined;
    let target = await realpath(absolute).catch(() => undefined);
    if (!target || (target !== realRootDir && !target.startsWith(realRootDir + path.sep))) return undefined;
    if ((await lstat(target).catch(() => undefined))?.isDirectory()) target = path.join(target, 'index.html');
    const handle = await open(target, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
    if (!handle) return undefined;
    const st = await handle.stat().catch(() => undefined);
    if (!st?.isFile()) {
      await handle.close();
      return undefined;
    }
    return { handle, size: st.size, target };
  }

  const typeOf = (target: string) => CONTENT_TYPES[path.extname(target).toLowerCase()] ?? 'application/octet-stream';
  // A served source map (opted in) is revalidated whatever its name: opting out must not wait for a year of caches.
  const cacheOf = (target: string) => (HASHED_NAME.test(target) && !isSourceMap(target) ? IMMUTABLE : REVALIDATE);

  /** A small file from memory (or read into it), a large one as an open handle to stream; null: none. */
  async function file(root: string, absolute: string): Promise<CachedFile | { handle: FileHandle; size: number; type: string; cache: string }> {
    const hit = files.get(absolute);
    if (hit !== undefined) return hit;
    const found = await openFile(root, absolute);
    if (!found) {
      files.set(absolute, null, MISS_COST + absolute.length);
      return null;
    }
    const type = typeOf(found.target);
    const cache = cacheOf(found.target);
    if (found.size > FILE_CACHE_MAX_FILE) return { handle: found.handle, size: found.size, type, cache };
    try {
      const body = await found.handle.readFile();
      const entry = { body, type, cache };
      files.set(absolute, entry, body.length + absolute.length);
      return entry;
    } finally {
      await found.handle.close();
    }
  }

  const text = (status: number, message: string, extra: Array<[string, string]> = []): SiteResponse => ({
    status,
    headers: [['content-type', 'text/plain; charset=utf-8'], ['cache-control', 'no-store'], ...extra],
    body: Buffer.from(message),
  });

  async function answer(
    status: number,
    f: NonNullable<Awaited<ReturnType<typeof file>>>,
    head: boolean,
    extra: Array<[string, string]> = [],
  ): Promise<SiteResponse> {
    const headers: Array<[string, string]> = [['content-type', f.type], ['cache-control', f.cache], ...extra];
    // A HEAD of a streamed file: the front door sends its length and no body.
    if ('handle' in f) return { status, headers, file: f.handle, size: f.size };
    return { status, headers, body: head ? Buffer.alloc(0) : f.body };
  }

  const serve: SiteServer['serve'] = async (root, method, url, site) => {
    if (site?.limited) {
      const body = { error: 'rate_limited', message: 'too many lookups of hosts that are no site from this address; retry later' };
      return {
        status: 429,
        headers: [
          ['content-type', 'application/json'],
          ['cache-control', 'no-store'],
          ['retry-after', String(site.limited.retryAfterSec)],
        ],
        body: Buffer.from(JSON.stringify(body)),
      };
    }
    if (method !== 'GET' && method !== 'HEAD') return text(405, 'method not allowed', [['allow', 'GET, HEAD']]);
    if (!root) return text(404, 'nothing is deployed here yet');
    let pathname: string;
    try {
      pathname = decodeURIComponent(url.split('?')[0]!);
    } catch {
      return text(400, 'bad path');
    }
    if (pathname.includes('\0') || pathname.length > 4096) return text(400, 'bad path');
    const absolute = path.join(root, path.posix.normalize(`/${pathname}`));
    if (absolute !== root && !absolute.startsWith(root + path.sep)) return text(404, 'not found');
    const head = method === 'HEAD';
    // A build's source maps (with their sourcesContent: the tenant's source) are not served unless the project opted
    // in: a `.map` is answered exactly as a file that is not there, so a `sourceMappingURL` comment left in the JS
    // just 404s. The check comes before the file cache, so turning the option off takes effect with the site's row.
    const found = isSourceMap(absolute) && !site?.serveSourceMaps ? undefined : await file(root, absolute);
    if (found) return answer(200, found, head, [['x-content-type-options', 'nosniff']]);
    const notFound = await file(root, path.join(root, '404.html'));
    if (notFound) return answer(404, { ...notFound, type: CONTENT_TYPES['.html']!, cache: REVALIDATE }, head);
    return text(404, 'not found');
  };
  return {
    serve,
    get stats() {
      return { entries: files.size, bytes: files.bytes };
    },
  };
}

/** `app.js.map`, `styles.css.MAP`: a source map by its name (the form every bundler writes). */
export function isSourceMap(file: string): boolean {
  return /\.map$/i.test(file);
}
