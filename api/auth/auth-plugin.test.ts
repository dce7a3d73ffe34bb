import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyPluginAsync } from 'fastify';
import { AUTH } from './route-auth.ts';
import { bearer, buildTestApi, createCliToken, createKey, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';

/** Cross-site protection for cookie writes, the error shape for framework failures, index and OpenAPI. */
const probe: FastifyPluginAsync = async (app) => {
  app.get('/v1/test-probe/boom', { config: { auth: AUTH.public } }, async () => {
    throw new Error('db password is hunter2 at 10.0.0.5');
  });
  app.get('/v1/test-probe/busy', { config: { auth: AUTH.public } }, async (_req, reply) =>
    reply.code(429).send({ error: 'rate_limited', message: 'slow down' }),
  );
  app.post('/v1/test-probe/echo', { config: { auth: AUTH.user }, bodyLimit: 1024 }, async (req) => ({ got: req.body, by: req.credential?.kind }));
};

let t: Awaited<ReturnType<typeof buildTestApi>>;
let user: Awaited<ReturnType<typeof signUpAndSignIn>>;
beforeAll(async () => {
  t = await buildTestApi({ plugins: [probe] });
  user = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

const createWithCookie = (headers: Record<string, string>, payload: unknown = { name: 'x' }) =>
  t.app.inject({ method: 'POST', url: '/v1/projects', headers: { cookie: user.cookie, ...headers }, payload: payload as object });

describe('cookie-authenticated writes', () => {
  it('are refused cross-site by Sec-Fetch-Site', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const res = await createWithCookie({ 'sec-fetch-site': site });
      expect(res.statusCode).toBe(403);
      expect(res.json().error).toBe('cross_site_request');
    }
  });

  it('are refused from a foreign Origin when Sec-Fetch-Site is absent', async () => {
    const res = await createWithCookie({ origin: 'https://evil.example' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toBe('cross_site_request');
    const nullOrigin = await createWithCookie({ origin: 'null' });
    expect(nullOrigin.statusCode).toBe(403);
  });

  it('pass from our own origin (PUBLIC_BASE_URL or the Host)', async () => {
    expect((await createWithCookie({ 'sec-fetch-site': 'same-origin' })).statusCode).toBe(201);
    expect((await createWithCookie({ origin: 'http://localhost:8080' })).statusCode).toBe(201);
    expect((await createWithCookie({ origin: 'http://api.internal:9000', host: 'api.internal:9000' })).statusCode).toBe(201);
  });

  it('accept only JSON bodies', async () => {
    for (const [type, body] of [
      ['text/plain', '{"name":"x"}'],
      ['application/x-www-form-urlencoded', 'name=x'],
      ['multipart/form-data; boundary=z', '--z\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--z--'],
    ]) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/projects',
        headers: { cookie: user.cookie, 'sec-fetch-site': 'same-origin', 'content-type': type },
        payload: body,
      });
      expect(res.statusCode, type).toBe(403);
      expect(res.json().error).toBe('cross_site_request');
    }
  });

  it('do not concern Bearer credentials', async () => {
    const cli = await createCliToken(t.app, user.cookie);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: { ...bearer(cli.token), origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' },
      payload: { name: 'from ci' },
    });
    expect(res.statusCode).toBe(201);
  });
});

describe('credentials', () => {
  it('401 for no credential, a malformed header, an unknown token or a bad cookie', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic abc' },
      { authorization: 'Bearer cx_live_short' },
      { authorization: 'Bearer cx_cli_' + 'A'.repeat(43) },
      { cookie: 'cx_session=cxs_nope' },
    ]) {
      const res = await t.app.inject({ url: '/v1/projects', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('unauthorized');
    }
  });

  it('ingest keys are refused with a message saying where they work, in either header', async () => {
    const p = await createProject(t.app, user.cookie);
    const k = await createKey(t.app, user.cookie, p.slug, { kind: 'ingest' });
    for (const headers of [bearer(k.token), { 'x-service-analytics-key': k.token }]) {
      const res = await t.app.inject({ url: `/v1/projects/${p.slug}`, headers });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ error: 'forbidden' });
      expect(res.json().message).toMatch(/write-only.*ingest/);
    }
  });

  it('a session user reaches only projects they are a member of (others look absent)', async () => {
    const p = await createProject(t.app, user.cookie);
    const stranger = await signUpAndSignIn(t.app, t.platform);
    const res = await t.app.inject({ url: `/v1/projects/${p.slug}`, headers: { cookie: stranger.cookie } });
    expect(res.statusCode).toBe(404);
    const missing = await t.app.inject({ url: `/v1/projects/no-such-project`, headers: { cookie: stranger.cookie } });
    expect(missing.json()).toEqual(res.json());
  });
});

describe('error shape', () => {
  it('unknown routes are 404 not_found', async () => {
    const res = await t.app.inject({ url: '/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('not_found');
  });

  it('a 500 never shows internals', async () => {
    const res = await t.app.inject({ url: '/v1/test-probe/boom' });
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toBe('internal');
    expect(res.body).not.toMatch(/hunter2|10\.0\.0\.5|Error/);
  });

  it('every 429 carries Retry-After', async () => {
    const res = await t.app.inject({ url: '/v1/test-probe/busy' });
    expect(res.statusCode).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('malformed JSON is 400, an oversized body 413, a foreign content type 415', async () => {
    const cli = await createCliToken(t.app, user.cookie);
    const h = { ...bearer(cli.token), 'content-type': 'application/json' };
    const bad = await t.app.inject({ method: 'POST', url: '/v1/test-probe/echo', headers: h, payload: '{"a":' });
    expect([bad.statusCode, bad.json().error]).toEqual([400, 'invalid_request']);
    const big = await t.app.inject({ method: 'POST', url: '/v1/test-probe/echo', headers: h, payload: JSON.stringify({ a: 'x'.repeat(4096) }) });
    expect([big.statusCode, big.json().error]).toEqual([413, 'payload_too_large']);
    const form = await t.app.inject({
      method: 'POST',
      url: '/v1/test-probe/echo',
      headers: { ...bearer(cli.token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a=1',
    });
    expect([form.statusCode, form.json().error]).toEqual([415, 'unsupported_media_type']);
    const ok = await t.app.inject({ method: 'POST', url: '/v1/test-probe/echo', headers: h, payload: '{"a":1}' });
    expect(ok.json()).toEqual({ got: { a: 1 }, by: 'cli' });
    // Not UTF-8: refused, as the edge refuses it, rather than stored with U+FFFD in place of the bytes.
    const latin1 = await t.app.inject({
      method: 'POST',
      url: '/v1/test-probe/echo',
      headers: h,
      payload: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe9, 0x22, 0x7d]),
    });
    expect([latin1.statusCode, latin1.json().error, latin1.json().message]).toEqual([400, 'invalid_request', 'the body is not valid UTF-8']);
    const utf8 = await t.app.inject({ method: 'POST', url: '/v1/test-probe/echo', headers: h, payload: Buffer.from('{"a":"é"}') });
    expect(utf8.json()).toEqual({ got: { a: 'é' }, by: 'cli' });
  });

  it('a NUL character or a lone surrogate (which Postgres cannot hold) is 400 invalid_request, in the body or the URL, not a 500', async () => {
    const h = { cookie: user.cookie, 'content-type': 'application/json' };
    const inName = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: h, payload: '{"name":"a\\u0000b"}' });
    expect([inName.statusCode, inName.json().error]).toEqual([400, 'invalid_request']);
    const inKey = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: h, payload: '{"name":"ok","x\\u0000":1}' });
    expect([inKey.statusCode, inKey.json().error]).toEqual([400, 'invalid_request']);
    const surrogate = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: h, payload: '{"name":"a\\ud800b"}' });
    expect([surrogate.statusCode, surrogate.json().error]).toEqual([400, 'invalid_request']);
    const emoji = await t.app.inject({ method: 'POST', url: '/v1/projects', headers: h, payload: '{"name":"ok \\ud83d\\ude00"}' });
    expect(emoji.statusCode).toBe(201);
    const project = await createProject(t.app, user.cookie, {});
    const inPath = await t.app.inject({ method: 'GET', url: `/v1/projects/${project.slug}%00`, headers: { cookie: user.cookie } });
    expect([inPath.statusCode, inPath.json().error]).toEqual([400, 'invalid_request']);
    const inQuery = await t.app.inject({ method: 'GET', url: `/v1/projects?x=%00`, headers: { cookie: user.cookie } });
    expect([inQuery.statusCode, inQuery.json().error]).toEqual([400, 'invalid_request']);
  });
});

describe('index and OpenAPI', () => {
  it('GET /v1/ lists the families and the OpenAPI document, publicly', async () => {
    for (const url of ['/v1/', '/v1']) {
      const res = await t.app.inject({ url });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.openapi).toMatch(/\/v1\/openapi\.json$/);
      expect(body.families.map((f: { name: string }) => f.name)).toEqual(expect.arrayContaining(['projects', 'cli', 'keys']));
    }
  });

  it("the OpenAPI document comes from the zod schemas and names each route's credentials", async () => {
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    const signIn = doc.paths['/v1/auth/sign-in'].post;
    const schema = signIn.requestBody.content['application/json'].schema;
    expect(schema.required).toEqual(expect.arrayContaining(['email', 'password']));
    expect(signIn.security).toEqual([]);
    expect(doc.paths['/v1/projects/{slug}/keys'].post.security).toEqual([{ session: [] }, { cliToken: [] }]);
    expect(doc.paths['/v1/projects/{slug}'].get.security).toEqual(expect.arrayContaining([{ apiKey: ['project:read'] }]));
    expect(doc.components.securitySchemes.cliToken.description).toMatch(/SERVICE_TOKEN/);
    // The edge's routes are documented from the schemas it validates with.
    const capture = doc.paths['/v1/analytics/i'].post;
    expect(capture.security).toEqual([{ ingestKey: [] }]);
    expect(capture.requestBody.content['application/json'].schema.properties.batch.items.required).toEqual(expect.arrayContaining(['event', 'distinctId']));
    expect(doc.paths['/v1/flags/i'].get.parameters.map((p: { name: string }) => p.name)).toContain('distinctId');
    expect(doc.paths['/api/{projectId}/envelope/'].post.summary).toMatch(/Sentry/);
    expect(doc.paths['/v1/projects/{slug}/flags'].post.security).toEqual(expect.arrayContaining([{ apiKey: ['flags:write'] }]));
  });
});
