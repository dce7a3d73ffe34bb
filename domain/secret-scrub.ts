/**
 * Secret scrubbing, applied before anything of an error event (spec §7.2) or a build log line is stored. Patterns follow
 * Sentry Relay's PII rules and gitleaks: provider key formats, bearer credentials, `key=value` pairs
 * whose key names a secret, credentials in URLs, private key blocks, JWTs and card numbers (Luhn).
 * Only the secret itself becomes `[Filtered]`, so the rest of a line (a stack frame's file path, the
 * words of a message) stays readable.
 */
import { setOwn } from '../schemas/storable-text.ts';

export const FILTERED = '[Filtered]';

const SECRET_NAME = String.raw`(?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|authorization|credentials?|cookie|session(?:[_-]?id)?|signature|credit[_-]?card|card[_-]?number|cvv|cvc)`;

interface Rule {
  re: RegExp;
  replace: string | ((...m: string[]) => string);
  /**
   * Literals every match contains: a text holding none of them skips the rule. Most texts hold no
   * secret, and one pass over the text for all rules' literals (ANY_LITERAL) is far cheaper than a
   * regex scan per rule.
   */
  literals?: string[];
  /** An exact cheap test instead of literals, for a rule whose literal most texts hold. */
  may?: (text: string) => boolean;
}

/**
 * scheme://user:pass@host needs an `@` after `://` before any `/` or whitespace. Browser stacks hold
 * `://` on every frame and almost never that `@`, so this scan decides instead of the regex.
 */
function hasUrlUserinfo(text: string): boolean {
  for (let i = text.indexOf('://'); i !== -1; i = text.indexOf('://', i + 3)) {
    for (let j = i + 3; j < text.length; j++) {
      const c = text.charCodeAt(j);
      if (c === 64 /* @ */) return true;
      if (c === 47 /* / */ || c <= 32) break;
    }
  }
  return false;
}

const AWS_PREFIXES = ['A3T', 'AKIA', 'ASIA', 'ABIA', 'ACCA', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA'];

const RULES: Rule[] = [
  // Private key blocks (PEM), across lines.
  {
    re: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g,
    replace: FILTERED,
    literals: ['-----BEGIN '],
  },
  // Credentials in URLs: scheme://user:pass@host
  { re: /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/:@]+:[^\s/@]+@/gi, replace: `$1${FILTERED}@`, may: hasUrlUserinfo },
  // Bearer / Basic / Token / Digest credentials.
  { re: /\b(Bearer|Basic|Token|Digest)(\s+)[A-Za-z0-9._~+/=-]{6,}/g, replace: `$1$2${FILTERED}`, literals: ['Bearer', 'Basic', 'Token', 'Digest'] },
  // JWTs.
  { re: /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g, replace: FILTERED, literals: ['eyJ'] },
  // AWS access key ids.
  { re: new RegExp(String.raw`\b(?:${AWS_PREFIXES.join('|')})[A-Z0-9]{16}\b`, 'g'), replace: FILTERED, literals: AWS_PREFIXES },
  // GitHub tokens.
  { re: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}\b/g, replace: FILTERED, literals: ['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'] },
  { re: /\bgithub_pat_[A-Za-z0-9_]{20,}/g, replace: FILTERED, literals: ['github_pat_'] },
  // Slack tokens and webhooks.
  { re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, replace: FILTERED, literals: ['xox'] },
  { re: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9/_-]+/g, replace: FILTERED, literals: ['hooks.slack.com'] },
  // Stripe secret and restricted keys.
  { re: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}/g, replace: FILTERED, literals: ['k_live_', 'k_test_'] },
  // Google API keys.
  { re: /\bAIza[0-9A-Za-z_-]{30,}/g, replace: FILTERED, literals: ['AIza'] },
  // Our own tokens (spec §5.1, §2.1, §2.4).
  {
    re: /\b(?:cx_live_|cx_test_|cak_live_|cx_cli_|cxm_|cxs_|whsec_|cxhook_)[A-Za-z0-9_-]{6,}/g,
    replace: FILTERED,
    literals: ['cx_', 'cak_live_', 'cxm_', 'cxs_', 'whsec_', 'cxhook_'],
  },
  // Other common providers (gitleaks): OpenAI/Anthropic, npm, GitLab, SendGrid, Twilio.
  { re: /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g, replace: FILTERED, literals: ['sk-'] },
  { re: /\bnpm_[A-Za-z0-9]{36}\b/g, replace: FILTERED, literals: ['npm_'] },
  { re: /\bglpat-[A-Za-z0-9_-]{20,}/g, replace: FILTERED, literals: ['glpat-'] },
  { re: /\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}/g, replace: FILTERED, literals: ['SG.'] },
  // key=value / key: value / "key": "value" where the key names a secret.
  {
    // No dots in the key and no `line:col` values, so `src/session.ts:12:5` in a frame stays intact.
    // The key starts at a word start: the same matches as starting anywhere (the leading class takes
    // any prefix), without retrying the secret names from every position inside every word.
    re: new RegExp(String.raw`(?<![A-Za-z0-9_-])([A-Za-z0-9_-]*${SECRET_NAME}[A-Za-z0-9_-]*)("?'?\s*[:=]\s*"?'?)(?!\d+:\d+)([^\s"'&,;<>)}\]]+)`, 'gi'),
    replace: (_m, key: string, sep: string, value: string) => (value === FILTERED ? `${key}${sep}${value}` : `${key}${sep}${FILTERED}`),
    may: (
      (re) => (text: string) =>
        re.test(text)
    )(new RegExp(SECRET_NAME, 'i')),
  },
];

/**
 * Every rule's literals in one pattern: a text it does not match skips all literal rules at once.
 * Replacements insert only `[Filtered]` (and keep a URL's scheme), which holds no literal, so a text
 * without one before scrubbing has none after any rule ran.
 */
const ANY_LITERAL = new RegExp(
  RULES.flatMap((r) => r.literals ?? [])
    .map((l) => l.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'))
    .join('|'),
);

const CARD_CANDIDATE = /\b[3-6]\d(?:[ -]?\d){11,17}\b/g;

/** Replace every secret-looking part of `text` with `[Filtered]`. */
export function scrubText(text: string): string {
  let out = text;
  const literal = ANY_LITERAL.test(text);
  for (const rule of RULES) {
    const may = rule.may ? rule.may(out) : literal && rule.literals!.some((l) => out.includes(l));
    if (may) out = out.replace(rule.re, rule.replace as string);
  }
  out = out.replace(CARD_CANDIDATE, (m) => {
    const digits = m.replace(/[ -]/g, '');
    return digits.length >= 13 && digits.length <= 19 && luhn(digits) ? FILTERED : m;
  });
  return out;
}

const SECRET_KEY = new RegExp(`^(?:.*[_-])?${SECRET_NAME}(?:[_-].*)?$|^auth$|^x-(?:api-)?(?:key|token)$`, 'i');
const SECRET_KEY_LOOSE = /passw|secret|token|api[_-]?key|apikey|authorization|cookie|credit[_-]?card|private[_-]?key/i;

/** A key whose name says its value is a secret: the value is filtered whole. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key) || SECRET_KEY_LOOSE.test(key);
}

/**
 * Key names scrubText found nothing in. Events of one app repeat the same few keys, so each is scanned once;
 * a key with a secret in it is never kept here (it is scanned every time), and the set starts over when full.
 */
const CLEAN_KEYS = new Set<string>();
const CLEAN_KEYS_MAX = 10_000;
const CLEAN_KEY_MAX_LENGTH = 128;

function scrubKey(key: string): string {
  if (CLEAN_KEYS.has(key)) return key;
  const scrubbed = scrubText(key);
  if (scrubbed === key && key.length <= CLEAN_KEY_MAX_LENGTH) {
    if (CLEAN_KEYS.size >= CLEAN_KEYS_MAX) CLEAN_KEYS.clear();
    CLEAN_KEYS.add(key);
  }
  return scrubbed;
}

/**
 * Scrub a property bag recursively: secret-named keys' values filtered whole, every string value scrubbed,
 * and every key name scrubbed too (a client may use a connection string or a token as a key).
 */
export function scrubValue(value: unknown, depth = 0): unknown {
  if (depth > 20) return FILTERED;
  if (typeof value === 'string') return scrubText(value);
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      setOwn(out, scrubKey(k), isSecretKey(k) && v !== null && v !== undefined && v !== '' ? FILTERED : scrubValue(v, depth + 1));
    }
    return out;
  }
  return value;
}

function luhn(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}
