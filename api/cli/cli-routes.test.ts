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
