import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { bearer, buildTestApi, createCliToken, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';

const clock = new ManualClock();
let t: Awaited<ReturnType<typeof buildTestApi>>;
let user: Awaited<ReturnType<typeof signUpAndSignIn>>;
beforeAll(async () => {
  t = await buildTestApi({ overrides: { clock } });
  user = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const start = async (remoteAddress = '10.0.0.1') =>
  (await t.app.inject({ method: 'POST', url: '/v1/cli/device', payload: { client_name: 'laptop' }, remoteAddress })).json();
const poll = (device_code: string) => t.app.inject({ method: 'POST', url: '/v1/cli/device/token', payload: { device_code } });
const approve = (user_code: string, cookie = user.cookie) =>
  t.app.inject({ method: 'POST', url: '/v1/cli/device/approve', headers: sessionHeaders(cookie), payload: { user_code } });

describe('CLI device login', () => {
  it('limits starts per caller IP (429 with Retry-After), and other addresses still start', async () => {
    const ip = '10.9.9.9';
    for (let i = 0; i < LIMITS.cliDeviceCode.startsPerIpPer10Min; i++) expect((await start(ip)).user_code).toBeDefined();
    const refused = await t.app.inject({ method: 'POST', url: '/v1/cli/device', payload: {}, remoteAddress: ip });
    expect([refused.statusCode, refused.json().error]).toEqual([429, 'rate_limited']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await start('10.9.9.10')).user_code).toBeDefined();
  });

  it('deletes codes that expired a day ago as new logins start; a fresh expired code still answers expired_token', async () => {
    const old = await start('10.8.0.1');
    clock.advance(LIMITS.cliDeviceCode.ttlMs + 1000);
    const recent = await start('10.8.0.2');
    clock.advance(LIMITS.cliDeviceCode.ttlMs + 1000);
    // `recent` expired moments ago: a late poll is told so.
    expect((await poll(recent.device_code)).json().error).toBe('expired_token');
    clock.advance(LIMITS.cliDeviceCode.keepExpiredMs);
    await start('10.8.0.3');
    const left = await t.platform.db.query('SELECT 1 FROM cli_device_codes WHERE device_code_hash = ANY($1::text[])', [
      [tokenHash(old.device_code), tokenHash(recent.device_code)],
    ]);
    expect(left.rows).toHaveLength(0);
  });

  it('start -> pending (428) -> approve -> token once -> reuse refused', async () => {
    const s = await start();
    expect(s).toMatchObject({ interval: LIMITS.cliDeviceCode.pollIntervalSec, expires_in: LIMITS.cliDeviceCode.ttlMs / 1000 });
    expect(s.user_code).toMatch(/^[B-Z]{4}-[B-Z]{4}$/);
    expect(s.verification_uri_complete).toContain(s.user_code);

    const pending = await poll(s.device_code);
    expect([pending.statusCode, pending.json().error]).toEqual([428, 'authorization_pending']);

    expect((await approve(s.user_code.toLowerCase().replace('-', ' '))).json()).toEqual({ approved: true, client_name: 'laptop' });
    const ok = await poll(s.device_code);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().access_token).toMatch(/^cx_cli_[A-Za-z0-9_-]{43}$/);

    const again = await poll(s.device_code);
    expect([again.statusCode, again.json().error]).toEqual([410, 'expired_token']);

    const who = await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(ok.json().access_token) });
    expect(who.json()).toMatchObject({ user: { id: user.userId, email: user.email }, credential: { kind: 'cli' } });
    const stored = await t.platform.db.query<Record<string, unknown>>('SELECT * FROM cli_tokens WHERE id = $1', [ok.json().token_id]);
    expect(stored.rows[0].token_hash).toBe(tokenHash(ok.json().access_token));
    expect(JSON.stringify(stored.rows)).not.toContain(ok.json().access_token);
  });

  it('an expired code cannot be approved or exchanged (410 expired_token)', async () => {
    const s = await start();
    clock.advance(LIMITS.cliDeviceCode.ttlMs + 1);
    expect((await approve(s.user_code)).json().error).toBe('expired_token');
    expect((await poll(s.device_code)).statusCode).toBe(410);
  });

  it('approval needs a console session; unknown codes are 404', async () => {
    const s = await start();
    const cli = await createCliToken(t.app, user.cookie);
    const byCli = await t.app.inject({ method: 'POST', url: '/v1/cli/device/approve', headers: bearer(cli.token), payload: { user_code: s.user_code } });
    expect([byCli.statusCode, byCli.json().error]).toEqual([403, 'session_required']);
    expect((await approve('ZZZZ-ZZZZ')).statusCode).toBe(404);
    expect((await poll('cxd_unknown')).statusCode).toBe(404);
  });

  it('project API keys are refused by /v1/cli', async () => {
    const p = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'live', scopes: ['project:read'] });
    const res = await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(k.token) });
    expect([res.statusCode, res.json().error]).toEqual([403, 'forbidden']);
  });

  it('lists CLI tokens by hint and revokes them; a revoked token is 401', async () => {
    const cli = await createCliToken(t.app, user.cookie);
    const list = await t.app.inject({ url: '/v1/cli/tokens', headers: { cookie: user.cookie } });
    const entry = list.json().tokens.find((x: { id: string }) => x.id === cli.id);
    expect(entry).toMatchObject({ hint: `cx_cli_${cli.token.slice(7, 11)}…`, revoked: false });
    expect(list.body).not.toContain(cli.token);
    const del = await t.app.inject({ method: 'DELETE', url: `/v1/cli/tokens/${cli.id}`, headers: sessionHeaders(user.cookie) });
    expect(del.json().token.revoked).toBe(true);
    const who = await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(cli.token) });
    expect(who.statusCode).toBe(401);
    const stranger = await signUpAndSignIn(t.app, t.platform);
    const other = await createCliToken(t.app, user.cookie);
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/cli/tokens/${other.id}`, headers: sessionHeaders(stranger.cookie) })).statusCode).toBe(404);
  });
});

/**
 * The device flow per RFC 8628 (issue 38, row 8): a client polling faster than its interval gets slow_down and a
 * longer interval (§3.5); the approval page reads where and when a login started (§5.4); codes are not guessed
 * freely by a signed-in account (§5.1).
 */
describe('CLI device login per RFC 8628', () => {
  it('8 polls a second answer slow_down, each adding 5 s to the interval; a poll that keeps the interval is pending', async () => {
    const s = await start('10.7.0.1');
    const answers: Array<[number, string, number, string | undefined]> = [];
    for (let i = 0; i < 8; i++) {
      if (i) clock.advance(125);
      const r = await poll(s.device_code);
      answers.push([r.statusCode, r.json().error, r.json().interval, r.headers['retry-after'] as string | undefined]);
    }
    expect(answers[0]).toEqual([428, 'authorization_pending', 5, '5']);
    expect(answers.slice(1)).toEqual([10, 15, 20, 25, 30, 35, 40].map((n) => [429, 'slow_down', n, String(n)]));
    // The new interval holds: sooner is still too soon, and waiting it out is a plain pending answer.
    clock.advance(40_000 - 1);
    expect((await poll(s.device_code)).json()).toMatchObject({ error: 'slow_down', interval: 45 });
    clock.advance(45_000);
    expect((await poll(s.device_code)).json()).toMatchObject({ error: 'authorization_pending', interval: 45 });
  });

  it('never raises the interval past a minute', async () => {
    const s = await start('10.7.0.2');
    let last = 0;
    for (let i = 0; i < 20; i++) last = (await poll(s.device_code)).json().interval;
    expect(last).toBe(60);
  });

  it('a client that keeps the interval never gets slow_down, and gets its token once approved', async () => {
    const s = await start('10.7.0.3');
    for (let i = 0; i < 3; i++) {
      expect((await poll(s.device_code)).statusCode).toBe(428);
      clock.advance(s.interval * 1000);
    }
    await approve(s.user_code);
    expect((await poll(s.device_code)).json().access_token).toMatch(/^cx_cli_/);
  });

  it('the approval page reads where and when the login started: the address, the user agent and the time', async () => {
    const started = await t.app.inject({
      method: 'POST',
      url: '/v1/cli/device',
      payload: { client_name: 'cx on build-box' },
      remoteAddress: '203.0.113.9',
      headers: { 'user-agent': `cx-cli/0.1 (linux x64) ${'x'.repeat(500)}` },
    });
    const code = started.json().user_code;
    const seen = await t.app.inject({ url: `/v1/cli/device?user_code=${code.toLowerCase()}`, headers: sessionHeaders(user.cookie) });
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toEqual({
      user_code: code,
      client_name: 'cx on build-box',
      started_at: new Date(clock.now()).toISOString(),
      expires_at: new Date(clock.now() + LIMITS.cliDeviceCode.ttlMs).toISOString(),
      ip: '203.0.113.9',
      user_agent: `cx-cli/0.1 (linux x64) ${'x'.repeat(300 - 23)}`,
    });
    // Only with a console session; only pending codes.
    const byCli = await t.app.inject({ url: `/v1/cli/device?user_code=${code}`, headers: bearer((await createCliToken(t.app, user.cookie)).token) });
    expect(byCli.statusCode).toBe(403);
    expect((await t.app.inject({ url: '/v1/cli/device?user_code=ZZZZ-ZZZZ', headers: sessionHeaders(user.cookie) })).statusCode).toBe(404);
    await approve(code);
    expect((await t.app.inject({ url: `/v1/cli/device?user_code=${code}`, headers: sessionHeaders(user.cookie) })).statusCode).toBe(404);
  });

  it('a signed-in account guessing codes is stopped after 30 tries in 10 minutes (429), looking up and approving alike', async () => {
    const guesser = await signUpAndSignIn(t.app, t.platform);
    const s = await start('10.7.0.4');
    for (let i = 0; i < 30; i++) {
      const r = await t.app.inject({ url: `/v1/cli/device?user_code=ZZZZ-ZZZ${'BCDFGHJKLMNPQRSTVWXZ'[i % 20]}`, headers: sessionHeaders(guesser.cookie) });
      expect(r.statusCode).toBe(404);
    }
    const refused = await approve(s.user_code, guesser.cookie);
    expect([refused.statusCode, refused.json().error]).toEqual([429, 'rate_limited']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another person is not held up by the guesser.
    expect((await approve(s.user_code)).statusCode).toBe(200);
  });
});
