/**
 * Host patterns: one rule for the edge's origin check (§7.3) and for environment stamping at the
 * edge (caps) and in the processor (§7.4), so the two can never disagree about a host.
 *
 * A host is what the edge stamps from an Origin (ingest/origin-policy.ts): its hostname, then
 * `:port` unless the port is 443. The bare form means 443 because the processor sees only this
 * string, not the scheme: leaving out only https' default keeps `http://x` (port 80) and
 * `https://x` (443) apart. (Edges before ports were stamped left every port out; such a host
 * still matches every pattern without a port, as it always did.)
 *
 * A pattern is an exact hostname or `*.example.com`, which matches any subdomain of example.com
 * (not the apex), optionally followed by `:port`. Without a port it matches its host on any port;
 * with one, only on that port. Case and trailing dots are ignored; IPv6 literals may be bracketed
 * (`[::1]:8080`) or, without a port, bare (`::1`).
 */
export interface ProjectDomains {
  productionDomains: string[];
  previewDomains: string[];
}

/** The port a stamped host without one is on (see above). */
export const IMPLIED_PORT = 443;

/** The stamp of an Origin's hostname and port (its scheme's default when the Origin names none). */
export function stampHost(hostname: string, port: number): string {
  return port === IMPLIED_PORT ? hostname : `${hostname}:${port}`;
}

export function hostMatches(host: string, pattern: string): boolean {
  const h = splitHostPort(host);
  return h !== null && matchesParsed(h, pattern);
}

export function matchesAny(host: string, patterns: readonly string[]): boolean {
  const h = splitHostPort(host);
  if (h === null) return false;
  for (const p of patterns) if (matchesParsed(h, p)) return true;
  return false;
}

/** The environment a host proves by the project's domains; null when it proves none. */
export function environmentOfHost(domains: ProjectDomains, host: string): 'production' | 'preview' | null {
  if (matchesAny(host, domains.productionDomains)) return 'production';
  if (matchesAny(host, domains.previewDomains)) return 'preview';
  return null;
}

/** The hostname of `name[:port]`, lower-cased, IPv6 literals bracketed; '' when malformed. */
export function hostnameOf(host: string): string {
  return splitHostPort(host)?.name ?? '';
}

interface HostPort {
  /** Lower-case, no trailing dot; IPv6 literals bracketed. */
  name: string;
  /** null: none written (a host: IMPLIED_PORT; a pattern: any port). */
  port: number | null;
}

function matchesParsed(h: HostPort, pattern: string): boolean {
  const p = splitHostPort(pattern);
  if (p === null) return false;
  if (p.port !== null && p.port !== (h.port ?? IMPLIED_PORT)) return false;
  if (p.name.startsWith('*.')) return h.name.endsWith(p.name.slice(1)) && h.name.length > p.name.length - 1;
  return h.name === p.name;
}

/**
 * Parsed hosts and patterns, by their text. The edge checks every browser request's host against the
 * project's patterns (twice: origin, then caps) and the processor every event's: the same few strings
 * each time, so each is parsed once. Cleared when it grows past SPLIT_CACHE_MAX (hosts come from
 * clients).
 */
const splitCache = new Map<string, HostPort | null>();
const SPLIT_CACHE_MAX = 10_000;

function splitHostPort(raw: string): HostPort | null {
  let parsed = splitCache.get(raw);
  if (parsed === undefined) {
    if (splitCache.size >= SPLIT_CACHE_MAX) splitCache.clear();
    parsed = parseHostPort(raw);
    splitCache.set(raw, parsed);
  }
  return parsed;
}

/** `name[:port]` split and normalised; null when malformed (an empty name or a port that is not 0-65535). */
function parseHostPort(raw: string): HostPort | null {
  const s = raw.trim().toLowerCase();
  let name = s;
  let port: string | undefined;
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close === -1) return null;
    name = s.slice(0, close + 1);
    const rest = s.slice(close + 1);
    if (rest) {
      if (!rest.startsWith(':')) return null;
      port = rest.slice(1);
    }
  } else {
    const colon = s.indexOf(':');
    if (colon !== -1 && colon === s.lastIndexOf(':')) {
      name = s.slice(0, colon);
      port = s.slice(colon + 1);
    } else if (colon !== -1) {
      name = `[${s}]`; // a bare IPv6 literal: more than one colon, so no port
    }
  }
  name = name.replace(/\.$/, '');
  if (!name) return null;
  if (port === undefined) return { name, port: null };
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return null;
  return { name, port: Number(port) };
}
