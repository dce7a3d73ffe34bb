import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { usersRepository } from './users-repository.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';

let t: Awaited<ReturnType<typeof buildTestApi>>;
beforeAll(async () => {
  t = await buildTestApi();
});
afterAll(async () => t?.close());

const signIn = (email: string, password: string, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', headers, payload: { email, password } });

describe('sign-in', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and returns the user', async () => {
    await usersRepository.createUser(t.platform.db, { email: 'Ada@Example.test', password: 'correct horse battery' });
    const res = await signIn('ada@example.test', 'correct horse battery');
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toMatchObject({ email: 'ada@example.test' });
    expect(res.json().user.passwordHash).toBeUndefined();
    const cookie = res.cookies.find((c) => c.name === 'cx_session')!;
    expect(cookie.value).toMatch(/^cxs_[A-Za-z0-9_-]{43}$/);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(cookie.secure).toBeFalsy(); // PUBLIC_BASE_URL is http in tests
    const me = await t.app.inject({ url: '/v1/auth/me', headers: { cookie: `cx_session=${cookie.value}` } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ user: { email: 'ada@example.test' }, credential: { kind: 'session' } });
  });

  it('refuses a wrong password or unknown email alike', async () => {
    const u = await signUpAndSignIn(t.app, t.platform);
    const wrong = await signIn(u.email, 'nope-nope-nope');
    const unknown = await signIn('nobody@example.test', 'nope-nope-nope');
    for (const res of [wrong, unknown]) {
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'invalid_credentials', message: 'email or password is wrong' });
      expect(res.cookies).toHaveLength(0);
    }
  });

  it('stores passwords as salted scrypt and sessions only as hashes', async () => {
    const u = await signUpAndSignIn(t.app, t.platform, { password: 'pw-stored-hashed-1' });
    const { rows } = await t.platform.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [u.userId]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(rows[0].password_hash).not.toContain('pw-stored-hashed-1');
    const token = u.cookie.split('=')[1];
    const sessions = await t.platform.db.query<Record<string, unknown>>('SELECT * FROM sessions WHERE user_id = $1', [u.userId]);
    expect(sessions.rows).toHaveLength(1);
    expect(sessions.rows[0].token_hash).toBe(tokenHash(token));
    expect(JSON.stringify(sessions.rows)).not.toContain(token);
    // Same password, another user: a different salt, so a different hash.
    const other = await usersRepository.createUser(t.platform.db, { email: `twin-${Date.now()}@example.test`, password: 'pw-stored-hashed-1' });
    const twin = await t.platform.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE id = $1', [other.id]);
    expect(twin.rows[0].password_hash).not.toBe(rows[0].password_hash);
  });

  it('rate limits attempts per email and IP: 429 rate_limited with Retry-After', async () => {
    const u = await signUpAndSignIn(t.app, t.platform); // one attempt used
    let last;
    for (let i = 1; i < LIMITS.signIn.perEmailAndIpPer15Min; i++) {
      last = await signIn(u.email, 'wrong-password-x');
      expect(last.statusCode).toBe(401);
    }
    last = await signIn(u.email, u.password); // even the right password waits
    expect(last.statusCode).toBe(429);
    expect(last.json().error).toBe('rate_limited');
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    // Another email from the same IP is not affected.
    const other = await signUpAndSignIn(t.app, t.platform);
    expect(other.cookie).toMatch(/^cx_session=/);
  });

  it('guesses from a shared IP cannot lock the owner out: a known browser and a fresh IP still sign in (issue 22, row 9)', async () => {
    const u = await signUpAndSignIn(t.app, t.platform);
    const shared = '203.0.113.7';
    const from = (ip: string, password: string, cookie?: string) =>
      t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', remoteAddress: ip, headers: cookie ? { cookie } : {}, payload: { email: u.email, password } });
    // The owner signed in from the shared IP once: the browser keeps a device cookie.
    const first = await from(shared, u.password);
    expect(first.statusCode).toBe(200);
    const device = first.cookies.find((c) => c.name === 'cx_device');
    expect(device?.httpOnly).toBe(true);
    // A stranger behind the same IP guesses until refused.
    let last;
    for (let i = 0; i < LIMITS.signIn.perEmailAndIpPer15Min + 2; i++) last = await from(shared, 'wrong-password-x');
    expect(last!.statusCode).toBe(429);
    // Without the cookie the right password waits too, from that IP ...
    expect((await from(shared, u.password)).statusCode).toBe(429);
    // ... but the owner's browser signs in from the same IP, and a fresh IP is not affected.
    expect((await from(shared, u.password, `cx_device=${device!.value}`)).statusCode).toBe(200);
    expect((await from('198.51.100.9', u.password)).statusCode).toBe(200);
    // A cookie of another account's device is no pass.
    const other = await signUpAndSignIn(t.app, t.platform);
    const otherFirst = await t.app.inject({
      method: 'POST',
      url: '/v1/auth/sign-in',
      remoteAddress: '192.0.2.50',
      payload: { email: other.email, password: other.password },
    });
    const otherDevice = otherFirst.cookies.find((c) => c.name === 'cx_device')!;
    expect((await from(shared, u.password, `cx_device=${otherDevice.value}`)).statusCode).toBe(429);
  });

  it('limits one IP across accounts (a spray)', async () => {
    const ip = '192.0.2.99';
    let last;
    for (let i = 0; i < LIMITS.signIn.perIpPer15Min + 1; i++) {
      last = await t.app.inject({
        method: 'POST',
        url: '/v1/auth/sign-in',
        remoteAddress: ip,
        payload: { email: `spray-${i}@example.test`, password: 'wrong-password-x' },
      });
    }
    expect(last!.statusCode).toBe(429);
  });

  it('refuses a cross-site sign-in (login CSRF)', async () => {
    const u = await signUpAndSignIn(t.app, t.platform);
    const res = await signIn(u.email, u.password, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toBe('cross_site_request');
  });

  it('rejects a malformed body with the offending fields', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: 'not-an-email' } });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error).toBe('invalid_request');
    expect(body.fields.map((f: { path: string }) => f.path).sort()).toEqual(['body.email', 'body.password']);
  });
});

describe('sign-out', () => {
  it('ends the session server-side: the old cookie no longer works', async () => {
    const u = await signUpAndSignIn(t.app, t.platform);
    const out = await t.app.inject({ method: 'POST', url: '/v1/auth/sign-out', headers: sessionHeaders(u.cookie) });
    expect(out.statusCode).toBe(204);
    const cleared = out.cookies.find((c) => c.name === 'cx_session');
    expect(cleared?.value).toBe('');
    const me = await t.app.inject({ url: '/v1/auth/me', headers: { cookie: u.cookie } });
    expect(me.statusCode).toBe(401);
    expect(me.json().error).toBe('unauthorized');
  });
});

describe('Secure cookie over https', () => {
  it('marks the cookie Secure when PUBLIC_BASE_URL is https', async () => {
    const s = await buildTestApi({ env: { PUBLIC_BASE_URL: 'https://console.example.test' } });
    try {
      await usersRepository.createUser(s.platform.db, { email: 'sec@example.test', password: 'secure-cookie-pw' });
      const res = await s.app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email: 'sec@example.test', password: 'secure-cookie-pw' } });
      expect(res.statusCode).toBe(200);
      expect(res.cookies.find((c) => c.name === 'cx_session')?.secure).toBe(true);
    } finally {
      await s.close();
    }
  });
});
