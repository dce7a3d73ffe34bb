import { describe, expect, it } from 'vitest';
import { FILTERED, isSecretKey, scrubText, scrubValue } from './secret-scrub.ts';

describe('scrubText', () => {
  it.each([
    ['AWS key', 'using AKIAIOSFODNN7EXAMPLE to sign', 'AKIAIOSFODNN7EXAMPLE'],
    ['GitHub classic', 'token ghp_abcdefghijklmnopqrstuvwxyz0123456789 rejected', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['GitHub oauth', 'gho_abcdefghijklmnopqrstuvwxyz0123456789', 'gho_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['GitHub fine-grained', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz', 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz'],
    ['Slack', 'slack xoxb-123456789012-abcdefghijkl failed', 'xoxb-123456789012-abcdefghijkl'],
    ['Stripe live', 'charge with sk_live_51Habcdefghijklmnop failed', 'sk_live_51Habcdefghijklmnop'],
    ['Stripe restricted', 'rk_live_51Habcdefghijklmnop', 'rk_live_51Habcdefghijklmnop'],
    ['Google', 'maps key AIzaSyA1234567890abcdefghijklmnopqrstuv', 'AIzaSyA1234567890abcdefghijklmnopqrstuv'],
    ['our live key', 'bad key cx_live_Zm9vYmFyYmF6cXV4', 'cx_live_Zm9vYmFyYmF6cXV4'],
    ['our ingest key', 'cak_live_abcdefghijklmnop', 'cak_live_abcdefghijklmnop'],
    ['our cli token', 'cx_cli_abcdefghijklmnop', 'cx_cli_abcdefghijklmnop'],
    ['webhook secret', 'whsec_abcdefghijklmnop', 'whsec_abcdefghijklmnop'],
    ['deploy hook', 'POST /v1/hooks/cxhook_abcdefghijklmnop', 'cxhook_abcdefghijklmnop'],
    ['JWT', 'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U expired', 'eyJhbGciOiJIUzI1NiJ9'],
    ['bearer', 'Authorization: Bearer abc.def-ghi_jkl', 'abc.def-ghi_jkl'],
    ['url credentials', 'connect postgres://admin:hunter2@db.internal:5432/app failed', 'hunter2'],
    ['url credentials after plain URLs', 'at f (https://app.example.com/a.js:1:2)\n    at g (redis://default:s3cretpw@cache:6379)', 's3cretpw'],
    ['password pair', 'login failed password=hunter2 for bob', 'hunter2'],
    ['json pair', '{"api_key": "s3cr3tvalue", "user": "bob"}', 's3cr3tvalue'],
    ['query token', 'GET /callback?access_token=abc123xyz&state=1', 'abc123xyz'],
    ['card number', 'card 4242 4242 4242 4242 declined', '4242 4242 4242 4242'],
    ['token scheme', 'Authorization: Token 9f8e7d6c5b4a', '9f8e7d6c5b4a'],
    ['digest scheme', 'Digest username_hash_0a1b2c3d', 'username_hash_0a1b2c3d'],
    ['Slack webhook', 'post to https://hooks.slack.com/services/T000/B000/XXXXabcd failed', 'T000/B000/XXXXabcd'],
    ['OpenAI', 'key sk-proj-abcdefghijklmnopqrstuvwx rejected', 'sk-proj-abcdefghijklmnopqrstuvwx'],
    ['Anthropic', 'sk-ant-abcdefghijklmnopqrstuvwx', 'sk-ant-abcdefghijklmnopqrstuvwx'],
    ['npm', 'npm_abcdefghijklmnopqrstuvwxyz0123456789 in .npmrc', 'npm_abcdefghijklmnopqrstuvwxyz0123456789'],
    ['GitLab', 'glpat-abcdefghijklmnopqrstu', 'glpat-abcdefghijklmnopqrstu'],
    ['SendGrid', 'SG.abcdefghijklmnopqr.abcdefghijklmnopqr', 'SG.abcdefghijklmnopqr'],
    ['secret inside a longer key', 'cfg.db_password_primary: "hunter2" loaded', 'hunter2'],
    ['uppercase secret key', 'X-API-KEY=abc123def456', 'abc123def456'],
  ])('%s is filtered', (_name, input, secret) => {
    const out = scrubText(input);
    expect(out).not.toContain(secret);
    expect(out).toContain(FILTERED);
  });

  it('filters a private key block whole', () => {
    const pem = 'key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdef\n-----END RSA PRIVATE KEY-----\ndone';
    const out = scrubText(pem);
    expect(out).not.toContain('MIIEowIBAAKCAQEA');
    expect(out).toBe(`key:\n${FILTERED}\ndone`);
  });

  it('keeps the readable rest of a message', () => {
    expect(scrubText('login failed password=hunter2 for bob')).toBe(`login failed password=${FILTERED} for bob`);
    expect(scrubText('Bearer abcdefghij')).toBe(`Bearer ${FILTERED}`);
  });

  it('keeps stack frame file paths readable', () => {
    const stack = [
      'Error: x',
      '    at getSession (/srv/app/src/session.ts:12:5)',
      '    at tokenize (/srv/app/src/auth/token-store.ts:40:2)',
      '    at https://app.example.com/assets/password-reset.js:1:4242',
    ].join('\n');
    expect(scrubText(stack)).toBe(stack);
  });

  it('does not flag numbers that fail Luhn or timestamps', () => {
    expect(scrubText('order 4242 4242 4242 4241 failed')).toContain('4242 4242 4242 4241');
    expect(scrubText('at 1700000000000 the job ran')).toContain('1700000000000');
  });
});

describe('scrubValue', () => {
  it('filters secret-named keys whole, recursively, and scrubs other strings', () => {
    const out = scrubValue({
      user: 'bob',
      password: 'hunter2',
      nested: { apiKey: 'x', Authorization: 'Basic Ym9iOmh1bnRlcjI=', list: [{ session_token: 'abc' }, 'ghp_abcdefghijklmnopqrstuvwxyz0123456789'] },
      cookie: 'sid=1',
      credit_card: '4242',
      note: 'contains sk_live_51Habcdefghijklmnop',
      count: 3,
    });
    expect(out).toEqual({
      user: 'bob',
      password: FILTERED,
      nested: { apiKey: FILTERED, Authorization: FILTERED, list: [{ session_token: FILTERED }, FILTERED] },
      cookie: FILTERED,
      credit_card: FILTERED,
      note: `contains ${FILTERED}`,
      count: 3,
    });
  });

  it('scrubs key names as it scrubs values: a secret used as a key is not kept', () => {
    const out = scrubValue({ 'postgres://u:pw@h/db': 1, nested: { ghp_abcdefghijklmnopqrstuvwxyz0123456789: 'x' }, plain: 'ok' });
    expect(out).toEqual({ [`postgres://${FILTERED}@h/db`]: 1, nested: { [FILTERED]: 'x' }, plain: 'ok' });
    expect(JSON.stringify(out)).not.toContain('pw@');
  });

  it.each([
    'password',
    'passwd',
    'secret',
    'token',
    'api_key',
    'apikey',
    'authorization',
    'cookie',
    'session',
    'credit_card',
    'x-api-key',
    'auth',
    'client_secret',
  ])('key %s is secret', (k) => expect(isSecretKey(k)).toBe(true));
  it.each(['user', 'path', 'author', 'count', 'message'])('key %s is not secret', (k) => expect(isSecretKey(k)).toBe(false));
});

describe('scrubValue keeps a key named __proto__ as data', () => {
  it("copies it as an own key, scrubbed like any other, without touching the copy's prototype", () => {
    const extra = JSON.parse('{"__proto__": {"password": "hunter2", "note": "n"}, "a": 1}') as Record<string, unknown>;
    const out = scrubValue(extra) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(JSON.parse(JSON.stringify(out))).toEqual(JSON.parse('{"__proto__": {"password": "[Filtered]", "note": "n"}, "a": 1}'));
  });
});
