import { mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BASE, cx, refusal } from './fake-cli.ts';

/**
 * `cx login | logout | whoami`: the RFC 8628 device flow (the code shown, the server's interval, 5 s more after
 * slow_down, expiry), the token kept at 0600 and forgotten, and who it belongs to.
 */
const ME = { user: { id: 'usr_1', email: 'ada@example.com', name: 'Ada', createdAt: '2025-01-01T00:00:00.000Z' }, credential: { kind: 'cli' } };
const START = {
  device_code: 'cxd_1',
  user_code: 'ABCD-EFGH',
  verification_uri: `${BASE}/cli/device`,
  verification_uri_complete: `${BASE}/cli/device?user_code=ABCD-EFGH`,
  interval: 2,
  expires_in: 600,
};
const configHome = () => mkdtemp(path.join(os.tmpdir(), 'cx-unit-'));
/** Signed in with nothing but the stored login: no SERVICE_TOKEN. */
const stored = (home: string) => ({ env: { XDG_CONFIG_HOME: home, SERVICE_TOKEN: undefined } });
/** A login `cx login` left earlier. */
async function storeLogin(home: string, token: string): Promise<void> {
  await mkdir(path.join(home, 'cx'), { recursive: true });
  await writeFile(path.join(home, 'cx', 'credentials.json'), JSON.stringify({ baseUrl: BASE, token }));
}

describe('cx login', () => {
  it('shows the code, polls at the interval (5 s slower after slow_down) until approved, and keeps the token 0600', async () => {
    const home = await configHome();
    const r = await cx(
      ['login', '--no-browser'],
      {
        'POST /cli/device': START,
        'POST /cli/device/token': (_: unknown, n: number) =>
          [refusal(428, 'authorization_pending'), refusal(429, 'slow_down'), { access_token: 'cx_cli_new', token_type: 'Bearer', token_id: 'tok_1' }][n],
        'GET /cli/whoami': ME,
      },
      stored(home),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`Confirm this code in the console: ABCD-EFGH\nOpen ${START.verification_uri_complete}\n`);
    expect(r.sleeps).toEqual([2000, 2000, 7000]);
    expect(r.calls[0]).toMatchObject({ body: { client_name: `cx on ${os.hostname()}`.slice(0, 100) }, token: undefined });
    expect(r.calls.filter((c) => c.path === '/cli/device/token').map((c) => c.body)).toEqual(Array(3).fill({ device_code: 'cxd_1' }));
    // Who it is, asked with the new token.
    expect(r.calls.at(-1)).toMatchObject({ path: '/cli/whoami', token: 'cx_cli_new' });
    const file = path.join(home, 'cx', 'credentials.json');
    expect(r.stdout).toBe(`Signed in as ada@example.com to ${BASE} (token kept in ${file})\n`);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ baseUrl: BASE, token: 'cx_cli_new', email: 'ada@example.com' });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('--json prints who signed in and where the token is', async () => {
    const home = await configHome();
    const r = await cx(
      ['login', '--no-browser', '--json'],
      { 'POST /cli/device': START, 'POST /cli/device/token': { access_token: 'cx_cli_new', token_type: 'Bearer', token_id: 'tok_1' }, 'GET /cli/whoami': ME },
      stored(home),
    );
    expect(JSON.parse(r.stdout)).toEqual({ user: ME.user, baseUrl: BASE, credentials: path.join(home, 'cx', 'credentials.json') });
  });

  it('stops when the code expires (exit 1), and any other refusal ends the login', async () => {
    const expired = await cx(['login', '--no-browser'], { 'POST /cli/device': { ...START, expires_in: 0 } }, stored(await configHome()));
    expect([expired.code, expired.stderr.split('\n').at(-2)]).toEqual([1, 'the code expired before it was approved; run cx login again']);
    const denied = await cx(
      ['login', '--no-browser'],
      { 'POST /cli/device': START, 'POST /cli/device/token': refusal(400, 'access_denied', 'the login was refused') },
      stored(await configHome()),
    );
    expect([denied.code, denied.stderr.split('\n').at(-2)]).toEqual([1, 'cx: the login was refused (access_denied)']);
  });

  it("opens the browser only at a terminal, and only for the service's own https page", async () => {
    const answers = { 'POST /cli/device': { ...START, expires_in: 0 } };
    const atTerminal = await cx(['login'], answers, { ...stored(await configHome()), tty: true });
    expect(atTerminal.opened).toEqual([START.verification_uri_complete]);
    expect(atTerminal.stderr).toMatch(/^Opened /m);
    expect((await cx(['login'], answers, stored(await configHome()))).opened).toEqual([]);
    expect((await cx(['login', '--no-browser'], answers, { ...stored(await configHome()), tty: true })).opened).toEqual([]);
    const elsewhere = { 'POST /cli/device': { ...START, expires_in: 0, verification_uri_complete: 'https://evil.example/cli/device' } };
    expect((await cx(['login'], elsewhere, { ...stored(await configHome()), tty: true })).opened).toEqual([]);
    const plain = { 'POST /cli/device': { ...START, expires_in: 0, verification_uri_complete: 'http://cx.example/cli/device' } };
    expect((await cx(['login'], plain, { env: { ...stored(await configHome()).env, SERVICE_BASE_URL: 'http://cx.example' }, tty: true })).opened).toEqual([]);
  });
});

describe('cx logout and whoami', () => {
  it('logout forgets the stored token, and says when there was none', async () => {
    const home = await configHome();
    await storeLogin(home, 'cx_cli_old');
    const r = await cx(['logout'], {}, stored(home));
    expect([r.code, r.stdout, r.calls]).toEqual([0, 'Signed out\n', []]);
    expect(JSON.parse((await cx(['logout', '--json'], {}, stored(home))).stdout)).toEqual({ signedOut: false });
    expect((await cx(['logout'], {}, stored(home))).stdout).toBe('Not signed in\n');
  });

  it('whoami names the user and the service; --json prints the answer', async () => {
    const r = await cx(['whoami'], { 'GET /cli/whoami': ME });
    expect([r.code, r.stdout]).toEqual([0, `ada@example.com on ${BASE}\n`]);
    expect(JSON.parse((await cx(['whoami', '--json'], { 'GET /cli/whoami': ME })).stdout)).toEqual(ME);
  });

  it('whoami uses the stored login when SERVICE_TOKEN is not set', async () => {
    const home = await configHome();
    await storeLogin(home, 'cx_cli_stored');
    const r = await cx(['whoami'], { 'GET /cli/whoami': ME }, stored(home));
    expect(r.calls[0]!.token).toBe('cx_cli_stored');
  });
});
