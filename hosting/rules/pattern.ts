/**
 * A path pattern of `_redirects` and `_headers` (Netlify's forms), compiled once and matched without a regular
 * expression, so no pattern a tenant writes can make matching slow:
 *   - literal segments compare exactly (case-sensitive);
 *   - `:name` matches one whole segment and names it (`/users/:id`);
 *   - `*` as the last segment matches the rest of the path, at least the empty rest (`/app/*` matches `/app`,
 *     `/app/` and `/app/a/b`), named `:splat`;
 *   - a trailing slash is ignored on both sides (`/about` and `/about/` are the same pattern and the same path).
 * Matching costs at most one comparison per segment of the pattern.
 */
export type Segment = { lit: string } | { param: string } | { splat: true };

export interface Pattern {
  segments: Segment[];
}

export const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The pattern a path in a rule file names, or why it is none. */
export function compilePattern(raw: string): Pattern | { refused: string } {
  if (!raw.startsWith('/')) return { refused: 'a path must start with / (whole URLs and domains are not supported)' };
  const parts = trimSlash(raw).split('/').slice(1);
  const segments: Segment[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (part === '*') {
      if (i !== parts.length - 1) return { refused: 'a * is only allowed as the last segment' };
      segments.push({ splat: true });
    } else if (part.startsWith(':')) {
      if (!PARAM_NAME.test(part.slice(1)) || part === ':splat') return { refused: `${part} is not a placeholder name` };
      segments.push({ param: part.slice(1) });
    } else if (part.includes('*')) return { refused: 'a * must be a whole segment' };
    else segments.push({ lit: part });
  }
  return { segments };
}

/** `/a/b/` -> `/a/b`; `/` stays. */
export function trimSlash(p: string): string {
  return p.length > 1 && p.endsWith('/') ? p.replace(/\/+$/, '') || '/' : p;
}

/** The request path's segments as matching sees them (a normalized, decoded path). */
export function pathSegments(pathname: string): string[] {
  const t = trimSlash(pathname);
  return t === '/' ? [] : t.split('/').slice(1);
}

/** The placeholders (and `splat`) a path binds, or undefined when the pattern does not match it. */
export function matchPattern(p: Pattern, segs: string[]): Record<string, string> | undefined {
  const { segments } = p;
  const n = segments.length;
  const last = segments[n - 1];
  const hasSplat = last !== undefined && 'splat' in last;
  const fixed = hasSplat ? n - 1 : n;
  if (hasSplat ? segs.length < fixed : segs.length !== fixed) return undefined;
  let params: Record<string, string> | undefined;
  for (let i = 0; i < fixed; i++) {
    const s = segments[i]!;
    const seg = segs[i]!;
    if ('lit' in s) {
      if (s.lit !== seg) return undefined;
    } else if ('param' in s) {
      if (seg === '') return undefined;
      params ??= {};
      params[s.param] = seg;
    }
  }
  params ??= {};
  if (hasSplat) params.splat = segs.slice(fixed).join('/');
  return params;
}

/** The placeholders a pattern binds (its `:name`s, and `splat` when it ends with `*`). */
export function boundNames(p: Pattern): Set<string> {
  const names = new Set<string>();
  for (const s of p.segments) {
    if ('param' in s) names.add(s.param);
    else if ('splat' in s) names.add('splat');
  }
  return names;
}
