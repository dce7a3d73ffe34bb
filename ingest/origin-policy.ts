/** Origin rules (§7.3) use the shared host patterns in platform/host-patterns.ts. */

/** Hostname of an Origin header value, lower-cased; null when it has none (e.g. `null`). */
export function originHostOf(origin: string): string | null {
  try {
    const host = new URL(origin).hostname.toLowerCase();
    return host || null;
  } catch {
    return null;
  }
}
