import { compilePattern, matchPattern, type Pattern } from './pattern.ts';
import type { HeaderRule } from './parse-headers.ts';
import type { RedirectRule } from './parse-redirects.ts';

/**
 * A deploy's compiled rules as the server matches them: each pattern compiled once when the deploy's rules are
 * loaded, a request matched against them in file order (first redirect rule wins; every header rule applies).
 */
export interface SiteRules {
  redirects: Array<RedirectRule & { pattern: Pattern }>;
  headers: Array<HeaderRule & { pattern: Pattern }>;
}

/** What a matched redirect rule does to a request. */
export type RuleAction =
  | { kind: 'redirect'; status: 301 | 302 | 303 | 307 | 308; location: string; force: boolean }
  | { kind: 'rewrite'; status: 200 | 404; path: string; force: boolean };

/** Rules loaded from a deploy's rule file (hosting/build/compile-site.ts wrote them, so none is refused here). */
export function loadRules(redirects: RedirectRule[], headers: HeaderRule[]): SiteRules {
  const withPattern = <R extends { from?: string; path?: string }>(r: R, raw: string) => {
    const pattern = compilePattern(raw);
    return 'refused' in pattern ? undefined : { ...r, pattern };
  };
  return {
    redirects: redirects.flatMap((r) => withPattern(r, r.from) ?? []),
    headers: headers.flatMap((r) => withPattern(r, r.path) ?? []),
  };
}

/**
 * The first redirect rule matching a request path (its decoded, normalized segments), with its target filled in.
 * A redirect's Location has the bound values percent-encoded (a path's CR/LF can never reach a header) and keeps
 * the request's query string unless the target has its own.
 */
export function matchRedirect(rules: SiteRules, segs: string[], query: string): RuleAction | undefined {
  for (const r of rules.redirects) {
    const params = matchPattern(r.pattern, segs);
    if (!params) continue;
    if (r.status === 200 || r.status === 404) return { kind: 'rewrite', status: r.status, path: fill(r.to, params, false), force: r.force };
    let location = fill(r.to, params, true);
    if (query && !location.includes('?')) location += `?${query}`;
    return { kind: 'redirect', status: r.status, location, force: r.force };
  }
  return undefined;
}

/** The headers of every header rule matching the path, in file order (a later one replaces an earlier one's name). */
export function matchHeaders(rules: SiteRules, segs: string[]): Array<[string, string]> {
  let out: Map<string, string> | undefined;
  for (const r of rules.headers) {
    if (!matchPattern(r.pattern, segs)) continue;
    out ??= new Map();
    for (const [k, v] of r.headers) out.set(k, v);
  }
  return out ? [...out] : [];
}

function fill(target: string, params: Record<string, string>, encode: boolean): string {
  return target.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => {
    const v = params[name];
    if (v === undefined) return whole;
    if (!encode) return v;
    return name === 'splat' ? v.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(v);
  });
}
