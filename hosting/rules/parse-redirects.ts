import { boundNames, compilePattern } from './pattern.ts';
import { CONTROL, type IgnoredLine, RULES_MAX, ruleLines } from './rule-bounds.ts';

/**
 * A deploy's `_redirects` (Netlify's form), one rule a line: `from to [status][!]`, `#` starts a comment line.
 *   - from: a path pattern (pattern.ts: `:name` placeholders, a trailing `*` splat);
 *   - to: a path on the site or, for a redirect only, an `http(s)://` URL; `:name` and `:splat` are filled in from
 *     what `from` bound (a name `from` does not bind refuses the line);
 *   - status: 301 (the default), 302, 303, 307, 308 redirect; 200 rewrite (serves `to`'s file at the requested URL;
 *     never another origin: no proxying); 404 (serves `to`'s file with 404); `!` forces the rule even when a file
 *     exists at the path (otherwise a file shadows it, as on Netlify).
 * Refused, each with its reason in the build log: query-string, country, language and role conditions (a fourth
 * field), other statuses, a `..` segment in `to`, control characters, lines over RULE_LINE_MAX_CHARS, rules past
 * RULES_MAX.
 */
export const REDIRECT_STATUSES = [200, 301, 302, 303, 307, 308, 404] as const;
export type RedirectStatus = (typeof REDIRECT_STATUSES)[number];

export interface RedirectRule {
  from: string;
  to: string;
  status: RedirectStatus;
  force: boolean;
  /** The line of `_redirects` it came from (1-based). */
  line: number;
}

export interface ParsedRules<R> {
  rules: R[];
  ignored: IgnoredLine[];
}

const EXTERNAL = /^https?:\/\/[^/\s]+/i;

export function parseRedirects(source: string): ParsedRules<RedirectRule> {
  const rules: RedirectRule[] = [];
  const ignored: IgnoredLine[] = [];
  for (const { text, line } of ruleLines(source, ignored)) {
    if (rules.length >= RULES_MAX) {
      ignored.push({ line, reason: `past ${RULES_MAX} rules: this line and the rest of the file are ignored` });
      break;
    }
    const parsed = parseRedirectLine(text, line);
    if ('reason' in parsed) ignored.push({ line, reason: parsed.reason });
    else rules.push(parsed);
  }
  return { rules, ignored };
}

function parseRedirectLine(text: string, line: number): RedirectRule | { reason: string } {
  if (CONTROL.test(text)) return { reason: 'control characters' };
  const fields = text.split(/\s+/);
  if (fields.length < 2) return { reason: 'a rule needs a path and a target' };
  const [from, to, statusField, ...rest] = fields as [string, string, string | undefined, ...string[]];
  if (to.includes('=') && !to.startsWith('/') && !EXTERNAL.test(to)) return { reason: 'query-string conditions are not supported' };
  if (rest.length > 0 || (statusField !== undefined && !/^\d{3}!?$/.test(statusField)))
    return { reason: 'conditions (query string, country, language, role) are not supported' };
  const pattern = compilePattern(from);
  if ('refused' in pattern) return { reason: pattern.refused };
  const status = Number(statusField?.replace('!', '') ?? 301);
  if (!(REDIRECT_STATUSES as readonly number[]).includes(status)) return { reason: `status ${status} is not supported (${REDIRECT_STATUSES.join(', ')})` };
  const force = statusField?.endsWith('!') ?? false;
  const external = EXTERNAL.test(to);
  if (external && status !== 301 && status !== 302 && status !== 303 && status !== 307 && status !== 308)
    return { reason: `a ${status} rule must stay on the site: another origin is only a redirect's target (no proxying)` };
  if (!external && !to.startsWith('/')) return { reason: 'the target must be a path (/...) or an http(s):// URL' };
  const targetPath = external ? to.replace(EXTERNAL, '') : to;
  if (
    targetPath
      .split(/[?#]/)[0]!
      .split('/')
      .some((s) => s === '..' || s === '.')
  )
    return { reason: 'the target may not hold . or .. segments' };
  const bound = boundNames(pattern);
  for (const m of targetPath.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g))
    if (!bound.has(m[1]!)) return { reason: `the target uses :${m[1]} which the path does not bind` };
  return { from, to, status: status as RedirectStatus, force, line };
}
