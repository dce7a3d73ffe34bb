/**
 * Origin rules (§7.3) and the environment an Origin implies (§7.4). Host patterns are exact
 * hostnames or `*.example.com`, which matches any subdomain of example.com (not the apex).
 */
export function hostMatches(host: string, pattern: string): boolean {
  const p = pattern.toLowerCase();
  if (p.startsWith('*.')) return host.endsWith(p.slice(1)) && host.length > p.length - 1;
  return host === p;
}

export function matchesAny(host: string, patterns: readonly string[]): boolean {
  for (const p of patterns) if (hostMatches(host, p)) return true;
  return false;
}

/** Hostname of an Origin header value, lower-cased; null when it has none (e.g. `null`). */
export function originHostOf(origin: string): string | null {
  try {
    const host = new URL(origin).hostname.toLowerCase();
    return host || null;
  } catch {
    return null;
  }
}
