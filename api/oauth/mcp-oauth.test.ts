import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { freePort } from '../../test/e2e/support/console-service.ts';
import { tokenHash } from '../../platform/tokens.ts';
import { prng } from '../../test/support/prng.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';

/**
 * MCP authorization (issue 27; the MCP authorization specification 2025-11-25) driven by the MCP SDK's own client:
 * it finds the protected-resource metadata from the 401, the authorization server's metadata, registers itself
 * (dynamic registration), sends the person to consent with PKCE S256, exchanges the code, calls tools with the `cxm_`
 * token, refreshes (the old refresh token then fails), and a revoked token is refused. A code or a refresh token used
 * twice revokes every token of its grant (issue 38), and consent marks a self-registered client unverified. Also: a cxm_ token is refused on
 * every other route, a token bound to another resource is refused, a wrong verifier or a reused code gets
 * invalid_grant, and a redirect URI that is neither https nor loopback is not registered.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let owner: SignedInUser;
let slug: string;
let receiver: HttpsReceiver;

class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get redirectUrl() {
    return 'http://127.0.0.1:9/callback';
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test agent',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tk: OAuthTokens) {
    this.saved = tk;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  receiver = await startHttpsReceiver();
  const outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
  outbound.table['meta.internal.example'] = ['10.0.0.1'];
  t = await buildTestApi({ env: { PUBLIC_BASE_URL: base, PORT: String(port) }, overrides: { outbound: outbound.guard } });
  owner = await signUpAndSignIn(t.app, t.platform);
  slug = (await createProject(t.app, owner.cookie)).slug;
  await t.app.listen({ port, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const form = (body: Record<string, string>) =>
  fetch(`${base}/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });

/** The person's consent, as the console page gives it: read who asks, approve, follow the redirect's code. */
const consent = (url: URL) => consentAs(url, 'Test agent');
async function consentAs(url: URL, clientName: string): Promise<string> {
  const q = Object.fromEntries(url.searchParams);
  const info = await t.app.inject({ url: `/v1/oauth/authorize?${url.searchParams}`, headers: sessionHeaders(owner.cookie) });
  expect(info.json()).toMatchObject({ client: { name: clientName }, resource: `${base}/v1/mcp` });
  const ok = await t.app.inject({ method: 'POST', url: '/v1/oauth/authorize', headers: sessionHeaders(owner.cookie), payload: q });
  expect(ok.statusCode, ok.body).toBe(200);
  const back = new URL(ok.json().redirect);
  expect(back.searchParams.get('state')).toBe(q.state ?? null);
  return back.searchParams.get('code')!;
}

describe('MCP authorization', () => {
  it("the SDK's client registers, gets consent with PKCE, calls tools with a cxm_ token, refreshes, and a revoked token is refused", async () => {
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), { authProvider: provider });
    await expect(new Client({ name: 'agent', version: '1' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.info?.client_id).toMatch(/^oac_/);
    const url = provider.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${base}/oauth/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('resource')).toBe(`${base}/v1/mcp`);
    await first.finishAuth(await consent(url));
    expect(provider.saved?.access_token).toMatch(/^cxm_/);

    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), { authProvider: provider }));
    const projects = await client.callTool({ name: 'list_projects', arguments: {} });
    expect((projects as { content: Array<{ text: string }> }).content[0]!.text).toContain(slug);
    await client.close();

    // At rest: hashes only.
    const stored = await t.platform.db.query<{ token_hash: string }>('SELECT token_hash FROM mcp_tokens');
    expect(JSON.stringify(stored.rows)).not.toContain(provider.saved!.access_token);

    // The token reaches nothing but the MCP endpoint.
    const elsewhere = await fetch(`${base}/v1/projects`, { headers: { authorization: `Bearer ${provider.saved!.access_token}` } });
    expect([elsewhere.status, (await elsewhere.json()).error]).toEqual([401, 'unauthorized']);

    // Refresh: new tokens; the old refresh token is spent.
    const refreshed = await form({ grant_type: 'refresh_token', refresh_token: provider.saved!.refresh_token!, client_id: provider.info!.client_id });
    const next = await refreshed.json();
    expect(next).toMatchObject({ access_token: expect.stringMatching(/^cxm_/), refresh_token: expect.stringMatching(/^cxr_/), token_type: 'Bearer' });

    // Revoked: the MCP endpoint refuses it.
    const call = (token: string) =>
      fetch(`${base}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    expect((await call(next.access_token)).status).toBe(200);
    expect(
      (
        await fetch(`${base}/v1/oauth/revoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `token=${next.access_token}`,
        })
      ).status,
    ).toBe(200);
    const revoked = await call(next.access_token);
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get('www-authenticate')).toMatch(/resource_metadata=/);
    // The spent refresh token stays spent (its reuse is the next describe's subject).
    const again = await form({ grant_type: 'refresh_token', refresh_token: provider.saved!.refresh_token!, client_id: provider.info!.client_id });
    expect([again.status, (await again.json()).error]).toEqual([400, 'invalid_grant']);
  });

  it('refuses a wrong verifier, a reused code, another resource, and a redirect URI that is neither https nor loopback', async () => {
    const reg = await fetch(`${base}/v1/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Test agent', redirect_uris: ['http://127.0.0.1:9/cb'] }),
    });
    const client = await reg.json();
    const verifier = 'v'.repeat(50);
    const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url');
    const url = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's1',
    }))
      url.searchParams.set(k, v);
    const code = await consent(url);
    const exchange = (v: string) =>
      form({ grant_type: 'authorization_code', code, code_verifier: v, client_id: client.client_id, redirect_uri: 'http://127.0.0.1:9/cb' });
    const wrong = await exchange('w'.repeat(50));
    expect([wrong.status, (await wrong.json()).error]).toEqual([400, 'invalid_grant']);
    // The code was spent by that attempt: one use, whatever came of it.
    expect((await (await exchange(verifier)).json()).error).toBe('invalid_grant');

    const other = await form({
      grant_type: 'authorization_code',
      code: 'x',
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: 'http://127.0.0.1:9/cb',
      resource: 'https://other.example/mcp',
    });
    expect((await other.json()).error).toBe('invalid_target');
    const badAsk = await t.app.inject({
      method: 'POST',
      url: '/v1/oauth/authorize',
      headers: sessionHeaders(owner.cookie),
      payload: { ...Object.fromEntries(url.searchParams), resource: 'https://other.example/mcp' },
    });
    expect(badAsk.statusCode).toBe(400);

    // A token whose resource is not this endpoint (issued before PUBLIC_BASE_URL changed, say) is refused.
    const code2 = await consent(url);
    const ok = await (
      await form({ grant_type: 'authorization_code', code: code2, code_verifier: verifier, client_id: client.client_id, redirect_uri: 'http://127.0.0.1:9/cb' })
    ).json();
    await t.platform.db.query(`UPDATE mcp_tokens SET resource = 'https://old.example/v1/mcp' WHERE created_at = (SELECT max(created_at) FROM mcp_tokens)`);
    const foreign = await fetch(`${base}/v1/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ok.access_token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(foreign.status).toBe(401);

    const evil = await fetch(`${base}/v1/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://evil.example/cb'] }),
    });
    expect([evil.status, (await evil.json()).error]).toEqual([400, 'invalid_redirect_uri']);
    const meta = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(meta).toMatchObject({ issuer: base, code_challenge_methods_supported: ['S256'], registration_endpoint: `${base}/v1/oauth/register` });
  });

  it('takes a client ID metadata document as the client_id, fetched through the outbound guard', async () => {
    const docUrl = receiver.url.replace(/\/hook$/, '/client.json');
    const wrongUrl = receiver.url.replace(/\/hook$/, '/wrong.json');
    receiver.respond = (r) =>
      r.path === '/client.json'
        ? {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ client_id: docUrl, client_name: 'Doc agent', redirect_uris: ['http://127.0.0.1:9/doc'] }),
          }
        : {
            status: 200,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ client_id: 'https://someone-else.example/c.json', redirect_uris: ['http://127.0.0.1:9/doc'] }),
          };
    const verifier = 'd'.repeat(50);
    const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url');
    const ask = (clientId: string) => {
      const url = new URL(`${base}/oauth/authorize`);
      for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:9/doc',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }))
        url.searchParams.set(k, v);
      return url;
    };
    const code = await consentAs(ask(docUrl), 'Doc agent');
    // Its name is vouched for only by the host that serves the document, which consent names.
    const info = await t.app.inject({ url: `/v1/oauth/authorize?${ask(docUrl).searchParams}`, headers: sessionHeaders(owner.cookie) });
    expect(info.json().client).toMatchObject({ registration: 'metadata_document', unverified: false, documentHost: new URL(docUrl).host });
    const tokens = await (
      await form({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: docUrl, redirect_uri: 'http://127.0.0.1:9/doc' })
    ).json();
    expect(tokens.access_token).toMatch(/^cxm_/);
    // A document that names another client, or one at a private address (never dialled), is refused.
    for (const bad of [wrongUrl, 'https://meta.internal.example/client.json']) {
      const before = receiver.requests.length;
      const res = await t.app.inject({ url: `/v1/oauth/authorize?${ask(bad).searchParams}`, headers: sessionHeaders(owner.cookie) });
      expect(res.statusCode, bad).toBe(400);
      if (bad.includes('internal')) expect(receiver.requests.length).toBe(before);
    }
  });

  it('answers random input to its public routes below 500, always JSON, and keeps serving', async () => {
    const rnd = prng(28);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    for (let i = 0; i < 200; i++) {
      const route = pick(['/v1/oauth/token', '/v1/oauth/register', '/v1/oauth/revoke']);
      const type = pick(['application/json', 'application/x-www-form-urlencoded', 'text/plain']);
      const fields: Record<string, unknown> = pick([
        {
          grant_type: pick(['authorization_code', 'refresh_token', 'password', text(5)]),
          code: pick(['cxc_x', text(30)]),
          code_verifier: text(50),
          client_id: text(8),
          redirect_uri: pick(['http://127.0.0.1/cb', text(20)]),
        },
        { redirect_uris: pick([[], ['https://a.example/cb'], [text(10)], 'x', null]), client_name: pick([text(300), 7]) },
        { token: pick([text(40), '', 'cxm_nope']) },
        {},
      ]);
      const body =
        type === 'application/json'
          ? pick([JSON.stringify(fields), '{', '[]'])
          : new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)])).toString();
      const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': type }, body });
      const answer = await res.text();
      expect(res.status, `${route} ${answer.slice(0, 200)}`).toBeLessThan(500);
      expect(res.headers.get('content-type') ?? '').toMatch(/application\/json/);
    }
    expect((await fetch(`${base}/.well-known/oauth-authorization-server`)).status).toBe(200);
  });
});

/**
 * A code or refresh token used twice (issue 38, rows 7 and 8): the attacker holds a copy of a credential the client
 * also holds. RFC 6749 §4.1.2: a code used twice revokes every token issued from it; OAuth 2.1 §4.3.1: a refresh
 * token used after it was rotated revokes its whole family, the tokens its first use made included.
 */
describe('a credential used twice revokes its grant', () => {
  const redirect = 'http://127.0.0.1:9/twice';
  const verifier = 't'.repeat(50);
  let clientId = '';
  beforeAll(async () => {
    const reg = await fetch(`${base}/v1/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Twice agent', redirect_uris: [redirect] }),
    });
    clientId = (await reg.json()).client_id;
  });
  const newCode = async () => {
    const challenge = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url');
    const q = { response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256' };
    const ok = await t.app.inject({ method: 'POST', url: '/v1/oauth/authorize', headers: sessionHeaders(owner.cookie), payload: q });
    return new URL(ok.json().redirect).searchParams.get('code')!;
  };
  const exchange = (code: string) => form({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: redirect });
  const refresh = (refresh_token: string) => form({ grant_type: 'refresh_token', refresh_token, client_id: clientId });
  const mcpStatus = async (token: string) =>
    (
      await fetch(`${base}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
    ).status;

  it("exchanging a code twice: the second is refused and the first exchange's tokens stop working", async () => {
    const code = await newCode();
    const first = await (await exchange(code)).json();
    expect(await mcpStatus(first.access_token)).toBe(200);
    const second = await exchange(code);
    expect([second.status, (await second.json()).error]).toEqual([400, 'invalid_grant']);
    expect(await mcpStatus(first.access_token)).toBe(401);
    const viaRefresh = await refresh(first.refresh_token);
    expect([viaRefresh.status, (await viaRefresh.json()).error]).toEqual([400, 'invalid_grant']);
    // Another grant of the same person and client is untouched.
    const other = await (await exchange(await newCode())).json();
    expect(await mcpStatus(other.access_token)).toBe(200);
  });

  it('a code raced by two exchanges at once leaves no working token', async () => {
    const code = await newCode();
    const answers = await Promise.all([exchange(code), exchange(code)]);
    const bodies = await Promise.all(answers.map((a) => a.json()));
    expect(bodies.filter((b) => b.error === 'invalid_grant')).toHaveLength(1);
    const issued = bodies.find((b) => b.access_token)!;
    expect(await mcpStatus(issued.access_token)).toBe(401);
    expect((await (await refresh(issued.refresh_token)).json()).error).toBe('invalid_grant');
  });

  it('reusing an old refresh token: refused, and the tokens its first use made stop working', async () => {
    const start = await (await exchange(await newCode())).json();
    const next = await (await refresh(start.refresh_token)).json();
    const third = await (await refresh(next.refresh_token)).json();
    expect(await mcpStatus(third.access_token)).toBe(200);
    // The attacker replays the first refresh token (stolen before the client rotated it twice).
    const replay = await refresh(start.refresh_token);
    expect([replay.status, (await replay.json()).error]).toEqual([400, 'invalid_grant']);
    expect(await mcpStatus(third.access_token)).toBe(401);
    expect((await (await refresh(third.refresh_token)).json()).error).toBe('invalid_grant');
    // Every token of the family is revoked, so the console's connected clients no longer list it.
    const family = await t.platform.db.query<{ live: number }>(
      'SELECT count(*) FILTER (WHERE revoked_at IS NULL)::int AS live FROM mcp_tokens WHERE grant_id = (SELECT grant_id FROM mcp_tokens WHERE token_hash = $1)',
      [tokenHash(third.access_token)],
    );
    expect(family.rows[0]!.live).toBe(0);
  });

  it('the attacker refreshing first: the client’s own refresh then revokes what the attacker got', async () => {
    const start = await (await exchange(await newCode())).json();
    const stolen = await (await refresh(start.refresh_token)).json();
    expect(await mcpStatus(stolen.access_token)).toBe(200);
    expect((await (await refresh(start.refresh_token)).json()).error).toBe('invalid_grant');
    expect(await mcpStatus(stolen.access_token)).toBe(401);
  });

  it('revoking a refresh token (RFC 7009) revokes the access token of its grant too', async () => {
    const tokens = await (await exchange(await newCode())).json();
    const next = await (await refresh(tokens.refresh_token)).json();
    const r = await fetch(`${base}/v1/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: next.refresh_token }),
    });
    expect(r.status).toBe(200);
    expect(await mcpStatus(next.access_token)).toBe(401);
  });
});

describe('consent does not take a client at its word', () => {
  it('marks a dynamically registered client unverified, strips look-alike characters from its name, and names the redirect host', async () => {
    const reg = await fetch(`${base}/v1/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // A right-to-left override and a zero-width space: "Claude Desktop" to the eye, something else underneath.
      body: JSON.stringify({ client_name: 'Claude\u200b Desk\u202etop\u0007', redirect_uris: ['https://collector.attacker.example/cb'] }),
    });
    const client = await reg.json();
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: 'https://collector.attacker.example/cb',
      code_challenge: 'c'.repeat(43),
      code_challenge_method: 'S256',
    });
    const info = await t.app.inject({ url: `/v1/oauth/authorize?${q}`, headers: sessionHeaders(owner.cookie) });
    expect(info.json()).toEqual({
      client: { id: client.client_id, name: 'Claude Desktop', registration: 'dynamic', unverified: true, documentHost: null },
      redirectHost: 'collector.attacker.example',
      redirectUri: 'https://collector.attacker.example/cb',
      redirectLoopback: false,
      resource: `${base}/v1/mcp`,
    });
    // The consent page passes on the client's whole request: parameters of the client's own are ignored (RFC 6749 §3.1),
    // not refused as an unknown parameter of the API's own routes is.
    q.set('prompt', 'consent');
    const withOwn = await t.app.inject({ url: `/v1/oauth/authorize?${q}`, headers: sessionHeaders(owner.cookie) });
    expect(withOwn.statusCode).toBe(200);
    expect(withOwn.json().client.id).toBe(client.client_id);
    expect((await t.app.inject({ url: '/v1/oauth/tokens?all=1', headers: sessionHeaders(owner.cookie) })).statusCode).toBe(400);
  });
});
