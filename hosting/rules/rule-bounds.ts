/**
 * What a deploy's `_redirects` and `_headers` may hold (both written by the tenant's build): a rule file is read
 * up to RULE_FILE_MAX_BYTES, each line up to RULE_LINE_MAX_CHARS, at most RULES_MAX rules of each file (the rest is
 * ignored with one line in the build log), at most HEADERS_PER_RULE_MAX header lines per `_headers` path, and at most
 * REPORTED_LINES_MAX ignored lines are named in the build log (the rest are counted).
 */
export const RULES_MAX = 1_000;
export const RULE_LINE_MAX_CHARS = 2_000;
export const RULE_FILE_MAX_BYTES = 1024 * 1024;
export const HEADERS_PER_RULE_MAX = 100;
export const REPORTED_LINES_MAX = 20;

/** A line a rule file holds that was not kept, and why (for the build log). */
export interface IgnoredLine {
  line: number;
  reason: string;
}

/**
 * Each line of a rule file that holds something (neither blank nor a `#` comment), numbered from 1; a line over
 * RULE_LINE_MAX_CHARS is reported in `ignored` instead, unread.
 */
export function* ruleLines(text: string, ignored: IgnoredLine[]): Generator<{ raw: string; text: string; line: number }> {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const cut = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (cut.length > RULE_LINE_MAX_CHARS) {
      ignored.push({ line: i + 1, reason: `longer than ${RULE_LINE_MAX_CHARS} characters` });
      continue;
    }
    const trimmed = cut.trim();
    if (trimmed && !trimmed.startsWith('#')) yield { raw: cut, text: trimmed, line: i + 1 };
  }
}

/** Control characters (tab aside): never in a path, a target or a header value. */
export const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;
