import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  approvalRedirect,
  authorizeRefusal,
  codeRefusal,
  consentInfo,
  displayName,
  documentClient,
  pkceMatches,
  redirectAllowed,
  refreshRefusal,
  registrationRefusal,
  resourceAccepted,
  serverMetadata,
} from './oauth-rules.ts';

const RESOURCE = 'https://svc.example/v1/mcp';
const verifier = 'v'.repeat(50);
const challenge = createHash('sha256').update(verifier).digest('base64url');

describe('OAuth rules', () => {
  it('redirect URIs: https, or http on loopback; never a fragment or credentials', () => {
    for (const ok of ['https://app.example/cb', 'http://127.0.0.1:9/cb', 'http://localhost/cb', 'http://[::1]:8/cb'])
      expect(redirectAllowed(ok), ok).toBe(true);
    for (const bad of ['http://app.example/cb', 'https://app.example/cb#x', 'https://u:p@app.example/cb', 'javascript:alert(1)', 'not a url'])
      expect(redirectAllowed(bad), bad).toBe(false);
    expect(registrationRefusal({ redirect_uris: ['http://app.example/cb'] })?.error).toBe('invalid_redirect_uri');
    expect(registrationRefusal({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_basic' })?.error).toBe(
      'invalid_client_metadata',
    );
    expect(registrationRefusal({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' })).toBeNull();
  });

  it("a client's name shows no invisible or look-alike characters", () => {
    expect(displayName('Claude\u200b Desk\u202etop\u0007')).toBe('Claude Desktop');
    expect(displayName('  a \n\t b  ')).toBe('a b');
    expect(displayName('x'.repeat(300))).toHaveLength(100);
  });

  it('a metadata document names its own URL and an allowed redirect; anything else (not an object included) is no client', () => {
    const url = 'https://agent.example/client.json';
    expect(documentClient(url, { client_id: url, client_name: 'Agent', redirect_uris: ['http://example.com/cb', 'https://agent.example/cb'] })).toEqual({
      id: url,
      name: 'Agent',
      redirectUris: ['https://agent.example/cb'],
    });
    expect(documentClient(url, { client_id: url, redirect_uris: ['https://agent.example/cb'] })).toMatchObject({ name: 'agent.example' });
    for (const doc of [null, 7, 'x', [], { client_id: 'https://other.example/c.json', redirect_uris: ['https://a.example/cb'] }, { client_id: url }])
      expect(typeof documentClient(url, doc), JSON.stringify(doc)).toBe('string');
  });

  it('an authorization names a redirect URI the client registered and this resource (a trailing slash aside)', () => {
    const client = { id: 'oac_1', name: 'A', redirectUris: ['https://a.example/cb'] };
    expect(authorizeRefusal(client, { redirect_uri: 'https://a.example/cb' }, RESOURCE)).toBeNull();
    expect(authorizeRefusal(client, { redirect_uri: 'https://a.example/cb', resource: `${RESOURCE}/` }, RESOURCE)).toBeNull();
    expect(authorizeRefusal(client, { redirect_uri: 'https://a.example/other' }, RESOURCE)).toMatch(/redirect_uri/);
    expect(authorizeRefusal(client, { redirect_uri: 'https://a.example/cb', resource: 'https://evil.example/v1/mcp' }, RESOURCE)).toMatch(/resource/);
    expect(resourceAccepted(undefined, RESOURCE)).toBe(true);
  });

  it('consent marks a registered client unverified and a document client by its host; the code goes back with state and issuer', () => {
    expect(consentInfo({ id: 'oac_1', name: 'A\u200b', redirectUris: [] }, 'http://127.0.0.1:9/cb', RESOURCE)).toEqual({
      client: { id: 'oac_1', name: 'A', registration: 'dynamic', unverified: true, documentHost: null },
      redirectHost: '127.0.0.1:9',
      redirectUri: 'http://127.0.0.1:9/cb',
      redirectLoopback: true,
      resource: RESOURCE,
    });
    expect(consentInfo({ id: 'https://d.example/c.json', name: 'D', redirectUris: [] }, 'https://d.example/cb', RESOURCE).client).toMatchObject({
      registration: 'metadata_document',
      unverified: false,
      documentHost: 'd.example',
    });
    const to = new URL(approvalRedirect('https://a.example/cb?keep=1', 'cxc_x', 's&1', 'https://svc.example'));
    expect(Object.fromEntries(to.searchParams)).toEqual({ keep: '1', code: 'cxc_x', state: 's&1', iss: 'https://svc.example' });
    expect(new URL(approvalRedirect('https://a.example/cb', 'c', undefined, 'https://svc.example')).searchParams.has('state')).toBe(false);
  });

  it('a code is exchanged once in time, by its client and redirect URI, with the verifier of its S256 challenge', () => {
    const code = { client_id: 'oac_1', redirect_uri: 'https://a.example/cb', code_challenge: challenge, expires_at: new Date(60_000) };
    const ask = { verifier, clientId: 'oac_1', redirectUri: 'https://a.example/cb' };
    expect(pkceMatches(verifier, challenge)).toBe(true);
    expect(codeRefusal(code, ask, 60_000)).toBeNull();
    expect(codeRefusal(code, ask, 60_001)).toMatch(/expired/);
    expect(codeRefusal(code, { ...ask, clientId: 'oac_2' }, 0)).toMatch(/another client/);
    expect(codeRefusal(code, { ...ask, redirectUri: 'https://a.example/x' }, 0)).toMatch(/another client or redirect_uri/);
    expect(codeRefusal(code, { ...ask, verifier: 'w'.repeat(50) }, 0)).toMatch(/code_verifier/);
  });

  it('a refresh token is used in time, and only by its own client when the client names itself', () => {
    const token = { client_id: 'oac_1', refresh_expires_at: new Date(1000) };
    expect(refreshRefusal(token, {}, 1000)).toBeNull();
    expect(refreshRefusal(token, { clientId: 'oac_1' }, 0)).toBeNull();
    expect(refreshRefusal(token, { clientId: 'oac_2' }, 0)).toMatch(/another client/);
    expect(refreshRefusal(token, {}, 1001)).toMatch(/expired/);
  });

  it("the metadata's endpoints are the route table's, on the service's own origin", () => {
    const m = serverMetadata('https://svc.example');
    expect([m.token_endpoint, m.registration_endpoint, m.revocation_endpoint, m.authorization_endpoint]).toEqual([
      'https://svc.example/v1/oauth/token',
      'https://svc.example/v1/oauth/register',
      'https://svc.example/v1/oauth/revoke',
      'https://svc.example/oauth/authorize',
    ]);
    expect(m.code_challenge_methods_supported).toEqual(['S256']);
  });
});
