/**
 * Host patterns: one rule for the edge's origin check (§7.3) and for environment stamping at the
 * edge (caps) and in the processor (§7.4), so the two can never disagree about a host.
 * A pattern is an exact hostname or `*.example.com`, which matches any subdomain of example.com
 * (not the apex). Case, a port on the host and trailing dots are ignored.
 */
export interface ProjectDomains {
  productionDomains: string[];
  previewDomains: string[];
}

export function hostMatches(host: string, pattern: string): boolean {
  const h = stripPort(host.toLowerCase()).replace(/\.$/, '');
  const p = pattern.toLowerCase().trim().replace(/\.$/, '');
  if (!p) return false;
  if (p.startsWith('*.')) return h.endsWith(p.slice(1)) && h.length > p.length - 1;
  return h === p;
}

export function matchesAny(host: string, patterns: readonly string[]): boolean {
  for (const p of patterns) if (hostMatches(host, p)) return true;
  return false;
}

/** The environment a host proves by the project's domains; null when it proves none. */
export function environmentOfHost(domains: ProjectDomains, host: string): 'production' | 'preview' | null {
  if (matchesAny(host, domains.productionDomains)) return 'production';
  if (matchesAny(host, domains.previewDomains)) return 'preview';
  return null;
}

function stripPort(host: string): string {
  if (host.startsWith('[')) return host.replace(/\]:\d+$/, ']');
  return host.replace(/:\d+$/, '');
}
