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

/** The first redirect rule a path matches and what it bound, before its target is filled in (see actionOf). */
export interface RedirectMatch {
  rule: SiteRules['redirects'][number];
  params: Record<string, string>;
}

/** The first redirect rule matching a request path (its decoded, normalized segments), in file order. */
export function firstRedirect(rules: SiteRules, segs: string[]): RedirectMatch | undefined {
  for (const rule of rules.redirects) {
    const params = matchPattern(rule.pattern, segs);
    if (params) return { rule, params };
  }
  return undefined;
}

/**
 * What a matched rule does, its target filled in: filled only when the rule applies (a rule that is not forced
 * applies only when no file answers, so a site's `/* /index.html 200` fallback costs nothing for its assets).
 * A redirect's Location has the bound values percent-encoded (a path's CR/LF can never reach a header) and keeps
 * the request's query string unless the target has its own.
 */
export function actionOf({ rule: r, params }: RedirectMatch, query: string): RuleAction {
  if (r.status === 200 || r.status === 404) return { kind: 'rewrite', status: r.status, path: fill(r.to, params, false), force: r.force };
  let location = fill(r.to, params, true);
  if (query && !location.includes('?')) location += `?${query}`;
  return { kind: 'redirect', status: r.status, location, force: r.force };
}

/** The first redirect rule matching a request path, with its target filled in. */
export function matchRedirect(rules: SiteRules, segs: string[], query: string): RuleAction | undefined {
  const hit = firstRedirect(rules, segs);
  return hit && actionOf(hit, query);
}

/** The headers of every header rule matching the path, in file order (a later one replaces an earlier one's name). */
export function matchHeaders(rules: SiteRules, segs: string[]): ReadonlyArray<readonly [string, string]> {
  let only: HeaderRule | undefined;
  let out: Map<string, string> | undefined;
  for (const r of rules.headers) {
    if (!matchPattern(r.pattern, segs)) continue;
    // One matching rule (the common case) is its own answer; several are merged, a later name replacing an earlier.
    if (!only) {
      only = r;
      continue;
    }
    out ??= new Map(only.headers);
    for (const [k, v] of r.headers) out.set(k, v);
  }
  return out ? [...out] : (only?.headers ?? []);
}

function fill(target: string, params: Record<string, string>, encode: boolean): string {
  return target.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => {
    const v = params[name];
    if (v === undefined) return whole;
    if (!encode) return v;
    return name === 'splat' ? v.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(v);
  });
}
