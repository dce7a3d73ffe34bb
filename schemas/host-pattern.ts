import { z } from 'zod';

/**
 * A host pattern as a project's environmentHosts and `ingestOrigins` store it (matched by
 * domain/host-patterns.ts): a hostname of at most 253 characters, optionally `:port` (1-65535),
 * and, where `wildcard` allows it, a leading `*.`. Trimmed and lower-cased.
 */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST = `(?=[^:]{1,253}(?::|$))${LABEL}(?:\\.${LABEL})*`;
const PORT = '(?::(\\d{1,5}))?';

export function hostPatternSchema(opts: { wildcard: boolean; message: string }) {
  const pattern = new RegExp(`^${opts.wildcard ? '(?:\\*\\.)?' : ''}${HOST}${PORT}$`);
  return z
    .string()
    .max(300)
    .trim()
    .toLowerCase()
    .refine((s) => {
      const m = pattern.exec(s);
      return m !== null && (m[1] === undefined || (Number(m[1]) >= 1 && Number(m[1]) <= 65535));
    }, opts.message);
}

/**
 * A host that browsers and resolvers read as an IP address, never as a name (issue 38): an IPv6 literal, bracketed or
 * not, and every IPv4 form of WHATWG URL's "ends in a number" rule, that is any host whose last label is decimal
 * digits or `0x` hex: `127.0.0.1`, `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1`, `0x7f.1` (all 127.0.0.1), and
 * `1.2.3.4.5` (no address at all, and no name either). No top-level domain is numeric, so no real name is caught.
 */
export function isIpAddressForm(host: string): boolean {
  const h = host.trim().toLowerCase();
  if (h.includes(':')) return /^\[?[0-9a-f:.]*:[0-9a-f:.]*(?:%[^\]]*)?\]?$/.test(h);
  const labels = h.split('.');
  if (labels.length > 1 && labels[labels.length - 1] === '') labels.pop();
  const last = labels[labels.length - 1] ?? '';
  return /^\d+$/.test(last) || /^0x[0-9a-f]*$/.test(last);
}
