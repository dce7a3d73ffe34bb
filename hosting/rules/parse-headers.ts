import { compilePattern } from './pattern.ts';
import type { ParsedRules } from './parse-redirects.ts';
import { CONTROL, HEADERS_PER_RULE_MAX, type IgnoredLine, RULES_MAX, ruleLines } from './rule-bounds.ts';

/**
 * A deploy's `_headers` (Netlify's form): a path pattern at the start of a line, then its headers on indented
 * `Name: value` lines; `#` starts a comment line.
 *   /assets/*
 *     Cache-Control: public, max-age=604800
 *     X-Frame-Options: DENY
 * Every rule whose pattern matches the request path applies, in file order; a later rule's value for the same name
 * replaces an earlier one's (and the server's own, e.g. Cache-Control).
 * Refused, each with its reason in the build log: a header line before any path, names that are not HTTP tokens,
 * values with control characters, names the server owns or that could reach beyond the site (REFUSED_HEADERS),
 * more than HEADERS_PER_RULE_MAX headers under one path, rules past RULES_MAX, lines over RULE_LINE_MAX_CHARS.
 */
export interface HeaderRule {
  path: string;
  headers: Array<[string, string]>;
  line: number;
}

/**
 * Headers a site may not set: framing and transport (the server frames the answer), the validators and encoding it
 * computes (a wrong one breaks caches), Location (a redirect is a `_redirects` rule), and Set-Cookie (a site's
 * cookie could be scoped to the shared sites domain, reaching every other tenant's site).
 */
export const REFUSED_HEADERS = new Set([
  'connection',
  'content-encoding',
  'content-length',
  'content-range',
  'accept-ranges',
  'date',
  'etag',
  'host',
  'keep-alive',
  'last-modified',
  'location',
  'proxy-authenticate',
  'server',
  'set-cookie',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'vary',
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;

export function parseHeaders(source: string): ParsedRules<HeaderRule> {
  const rules: HeaderRule[] = [];
  const ignored: IgnoredLine[] = [];
  /** The rule header lines go to; null after a refused path (its header lines are skipped with it). */
  let current: HeaderRule | null | undefined;
  for (const { raw, text, line } of ruleLines(source, ignored)) {
    if (CONTROL.test(raw)) {
      ignored.push({ line, reason: 'control characters' });
      continue;
    }
    if (!/^\s/.test(raw)) {
      if (rules.length >= RULES_MAX) {
        ignored.push({ line, reason: `past ${RULES_MAX} rules: this line and the rest of the file are ignored` });
        break;
      }
      const pattern = compilePattern(text);
      if ('refused' in pattern || /\s/.test(text)) {
        ignored.push({ line, reason: 'refused' in pattern ? pattern.refused : 'a path holds no spaces' });
        current = null;
        continue;
      }
      current = { path: text, headers: [], line };
      rules.push(current);
      continue;
    }
    if (current === null) continue;
    if (current === undefined) {
      ignored.push({ line, reason: 'a header before any path' });
      continue;
    }
    const colon = text.indexOf(':');
    const name = colon > 0 ? text.slice(0, colon).trim() : '';
    const value = text.slice(colon + 1).trim();
    if (!TOKEN.test(name)) ignored.push({ line, reason: 'not a `Name: value` header line' });
    else if (REFUSED_HEADERS.has(name.toLowerCase())) ignored.push({ line, reason: `${name} is set by the server, not by _headers` });
    else if (current.headers.length >= HEADERS_PER_RULE_MAX) ignored.push({ line, reason: `more than ${HEADERS_PER_RULE_MAX} headers under ${current.path}` });
    else current.headers.push([name.toLowerCase(), value]);
  }
  return { rules: rules.filter((r) => r.headers.length > 0), ignored };
}
