import net from 'node:net';
import dns from 'node:dns';
import type { LookupAddress } from 'node:dns';
import { hostOf, OutboundUrlError } from '../../ports/outbound-url-guard.ts';

/**
 * The rules of the outbound URL guard (ports/outbound-url-guard.ts), which its adapters apply: https only, no
 * credentials, and every address a name resolves to public, checked when a URL is saved and again inside the
 * connection's DNS lookup at every dial, so a name that later resolves (rebinds) to a private address is still
 * refused where it matters.
 *
 * Only globally routable unicast is allowed. IPv6 forms that carry an IPv4 address (IPv4-mapped,
 * IPv4-compatible, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16) are judged by the IPv4
 * address they carry; Teredo (2001::/32) and the other special ranges are refused outright.
 * Numeric host forms (`0x7f.1`, `2130706433`, `017700000001`) are canonicalised by the WHATWG URL
 * parser to dotted quads before any check, and node's resolver would read them the same way.
 */

/** The relaxations an adapter may apply: ALLOW_LOCAL_OUTBOUND (loopback and http://), or the tests' loopback stand-ins. */
export interface GuardOptions {
  /** Let loopback addresses (127.0.0.0/8, ::1) through: the tests' local receiver. Nothing else private. */
  allowLoopback?: boolean;
  /** Let `http://` URLs through (ALLOW_LOCAL_OUTBOUND, a developer's machine). */
  allowHttp?: boolean;
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

// Special-purpose IPv4 ranges (IANA IPv4 Special-Purpose Address Registry, plus multicast and class E).
const V4_BLOCKED: Array<[string, number, string]> = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.31.196.0', 24, 'AS112'],
  ['192.52.193.0', 24, 'AMT'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['192.175.48.0', 24, 'AS112'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V6_BLOCKED: Array<[string, number, string]> = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['100::', 64, 'discard-only'],
  ['2001::', 32, 'Teredo'],
  ['2001:2::', 48, 'benchmarking'],
  ['2001:db8::', 32, 'documentation'],
  ['2001:10::', 28, 'ORCHID'],
  ['2001:20::', 28, 'ORCHIDv2'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'SRv6 SIDs'],
  ['fc00::', 7, 'unique local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

const v4List = new net.BlockList();
const v6List = new net.BlockList();
const v4Reason = V4_BLOCKED.map(([a, p, why]) => {
  const l = new net.BlockList();
  l.addSubnet(a, p, 'ipv4');
  v4List.addSubnet(a, p, 'ipv4');
  return { l, why };
});
const v6Reason = V6_BLOCKED.map(([a, p, why]) => {
  const l = new net.BlockList();
  l.addSubnet(a, p, 'ipv6');
  v6List.addSubnet(a, p, 'ipv6');
  return { l, why };
});

/** The 8 groups of an IPv6 address as numbers (handles `::` and a dotted IPv4 tail). */
function v6Groups(addr: string): number[] {
  let s = addr.toLowerCase().split('%')[0];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const o = dotted[1].split('.').map(Number);
    s = s.slice(0, -dotted[1].length) + `${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail ? tail.split(':') : [];
  const fill = tail !== undefined ? Array(8 - h.length - t.length).fill('0') : [];
  return [...h, ...fill, ...t].map((g) => parseInt(g, 16));
}

function v4FromGroups(hi: number, lo: number): string {
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The IPv4 address an IPv6 address carries, for the forms that route to it; undefined otherwise. */
export function embeddedIPv4(addr: string): string | undefined {
  const g = v6Groups(addr);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4FromGroups(g[6], g[7]); // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeros(0, 6) && (g[6] !== 0 || g[7] > 1)) return v4FromGroups(g[6], g[7]); // ::a.b.c.d (IPv4-compatible, deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4FromGroups(g[6], g[7]); // NAT64 well-known prefix
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return v4FromGroups(g[6], g[7]); // NAT64 local-use 64:ff9b:1::/48 (RFC 8215)
  if (g[0] === 0x2002) return v4FromGroups(g[1], g[2]); // 6to4
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return v4FromGroups(g[6], g[7]); // ::ffff:0:a.b.c.d (SIIT IPv4-translated)
  return undefined;
}

/** Why an IP address is not a public unicast address, or null when it is. */
export function blockedReason(ip: string, opts: GuardOptions = {}): string | null {
  const kind = net.isIP(ip);
  if (kind === 4) {
    if (opts.allowLoopback && ip.startsWith('127.')) return null;
    if (!v4List.check(ip, 'ipv4')) return null;
    return v4Reason.find((r) => r.l.check(ip, 'ipv4'))!.why;
  }
  if (kind === 6) {
    const v4 = embeddedIPv4(ip);
    if (v4 !== undefined) {
      const inner = blockedReason(v4, {});
      return inner ? `${inner} (IPv4 ${v4} inside IPv6)` : null;
    }
    if (opts.allowLoopback && v6Groups(ip).every((x, i) => x === (i === 7 ? 1 : 0))) return null;
    if (v6List.check(ip, 'ipv6')) return v6Reason.find((r) => r.l.check(ip, 'ipv6'))!.why;
    // Only global unicast 2000::/3 is routable on the internet; everything else is reserved.
    const first = v6Groups(ip)[0];
    if (first < 0x2000 || first > 0x3fff) return 'reserved';
    return null;
  }
  return 'not an IP address';
}

/** `localhost` or a name under it (RFC 6761): loopback, never asked of DNS. */
const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

/** Parse and check the form of a webhook URL (no DNS). Returns the canonical URL. */
export function parseWebhookUrl(raw: string, opts: GuardOptions = {}): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundUrlError('invalid_request', 'url is not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && !(opts.allowHttp && url.protocol === 'http:'))
    throw new OutboundUrlError('url_not_https', opts.allowHttp ? 'url must use https or http' : 'url must use https');
  if (url.username || url.password) throw new OutboundUrlError('url_has_credentials', 'url must not carry credentials (user:password@)');
  const host = hostOf(url);
  if (!host) throw new OutboundUrlError('url_unresolvable', 'url has no host');
  if (net.isIP(host)) {
    const why = blockedReason(host, opts);
    if (why) throw new OutboundUrlError('url_private_host', `url host ${host} is not a public address (${why})`);
  } else if (isLocalhostName(host)) {
    if (!opts.allowLoopback) throw new OutboundUrlError('url_private_host', `url host ${host} is loopback`);
  }
  return url;
}

/** Resolve a host and require every address to be public. Returns the addresses. */
export async function checkResolvedHost(host: string, opts: GuardOptions & { resolve?: Resolver } = {}): Promise<LookupAddress[]> {
  if (net.isIP(host)) {
    const why = blockedReason(host, opts);
    if (why) throw new OutboundUrlError('url_private_host', `${host} is not a public address (${why})`);
    return [{ address: host, family: net.isIP(host) }];
  }
  // `localhost` and its subdomains are loopback by definition (RFC 6761 §6.3), as browsers and curl read them, whatever
  // this machine's resolver says: `http://demo.localhost:8080/` is a site `npm start` serves. Loopback is then judged.
  if (isLocalhostName(host)) {
    const why = blockedReason('127.0.0.1', opts);
    if (why) throw new OutboundUrlError('url_private_host', `url host ${host} is loopback`);
    return [{ address: '127.0.0.1', family: 4 }];
  }
  let addrs: LookupAddress[];
  try {
    addrs = await (opts.resolve ?? systemResolver)(host);
  } catch (err) {
    throw new OutboundUrlError('url_unresolvable', `url host ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!addrs.length) throw new OutboundUrlError('url_unresolvable', `url host ${host} does not resolve`);
  for (const a of addrs) {
    const why = blockedReason(a.address, opts);
    if (why) throw new OutboundUrlError('url_private_host', `url host ${host} resolves to ${a.address} (${why})`);
  }
  return addrs;
}

/** The whole creation-time check: form, then every resolved address. */
export async function validateWebhookUrl(raw: string, opts: GuardOptions & { resolve?: Resolver } = {}): Promise<URL> {
  const url = parseWebhookUrl(raw, opts);
  await checkResolvedHost(hostOf(url), opts);
  return url;
}

/**
 * A `lookup` for net/tls/https connect options: resolves, refuses the connection when ANY address
 * is not public, and hands node only checked addresses. This is the check that DNS rebinding
 * cannot get around, because these are the addresses the socket dials.
 */
export function guardedLookup(opts: GuardOptions & { resolve?: Resolver } = {}): net.LookupFunction {
  return ((
    hostname: string,
    options: dns.LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    checkResolvedHost(hostname.replace(/^\[(.*)\]$/, '$1'), opts).then(
      (addrs) => {
        const wanted = options?.family === 4 || options?.family === 6 ? addrs.filter((a) => a.family === options.family) : addrs;
        if (!wanted.length) return callback(Object.assign(new Error(`no IPv${options.family} address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options?.all) callback(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      },
      (err: OutboundUrlError) => callback(Object.assign(err, { code: err.code }) as NodeJS.ErrnoException, ''),
    );
  }) as unknown as net.LookupFunction;
}
