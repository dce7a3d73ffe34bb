import { stampHost } from '../domain/host-patterns.ts';

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/**
 * The host an Origin header value is matched (§7.3) and stamped by, lower-cased: `host` for https on
 * 443, else `host:port` with the scheme's default port when the Origin names none (`http://x` is
 * `x:80`; domain/host-patterns.ts matches it and says why). A scheme without a default port gives
 * the bare host. Null when it has no host (e.g. `null`).
 */
export function originHostOf(origin: string): string | null {
  try {
    const url = new URL(origin);
    const host = url.hostname.toLowerCase();
    if (!host) return null;
    const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol];
    return port === undefined ? host : stampHost(host, port);
  } catch {
    return null;
  }
}
