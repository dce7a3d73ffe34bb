import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addLiveSite } from '../../test/support/ingest-fixtures.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';

/**
 * Row 2 of issue 22: a project with a ready deploy could claim `localhost`, `127.0.0.1` or another project's domain
 * and take over the console and API host. Now the service's own hosts are reserved, a domain serves only once its
 * project proved control through DNS (a fake TXT resolver here), and only for one project.
 */
const txt = new Map<string, string[]>();
let t: Awaited<ReturnType<typeof buildTestApi>>;
let owner: SignedInUser;

beforeAll(async () => {
  t = await buildTestApi({ overrides: { txt: { resolveTxt: async (name) => txt.get(name) ?? [] } } });
  owner = await signUpAndSignIn(t.app, t.platform);
});
afterAll(async () => t?.close());

async function projectWithSite(html: string) {
  const p = await createProject(t.app, owner.cookie);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'domain-site-'));
  await writeFile(path.join(dir, 'index.html'), html);
  await addLiveSite(t.platform, p.id, dir);
  return p;
}

const add = (slug: string, domain: string) =>
  t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/domains`, headers: sessionHeaders(owner.cookie), payload: { domain } });
const verify = (slug: string, domain: string) =>
  t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/domains/${domain}/verify`, headers: sessionHeaders(owner.cookie) });

describe('custom domains', () => {
  it("the service's own hosts can never be claimed: 400 domain_reserved", async () => {
    const p = await projectWithSite('<h1>evil</h1>');
    for (const domain of ['localhost', 'app.localhost', '127.0.0.1', '10.0.0.8', `${p.slug}.localhost`, 'dep-x.localhost']) {
      const res = await add(p.slug, domain);
      expect(res.statusCode, domain).toBe(400);
      expect(res.json().error).toBe('domain_reserved');
    }
  });

  it('an IP address in any form is refused as a domain: every numeric, hex and octal IPv4 form (400 domain_reserved), IPv6 literals', async () => {
    // Issue 38 row 10: these were claimable (pending). Browsers and resolvers read each as an address (127.0.0.1 unless said).
    const p = await projectWithSite('<h1>numeric</h1>');
    const ipv4Forms = [
      '127.1',
      '127.0.1',
      '2130706433',
      '0x7f000001',
      '0X7F000001',
      '0177.0.0.1',
      '0177.1',
      '017700000001',
      '0x7f.0.0.1',
      '0x7f.1',
      '0',
      '0x',
      '10.1',
      '3232235777', // 192.168.1.1
      '1.2.3.4.5', // no address, and no name either
      'evil.0x7f',
      'shop.example.123',
    ];
    for (const domain of ipv4Forms) {
      const res = await add(p.slug, domain);
      expect(res.statusCode, domain).toBe(400);
      expect(res.json(), domain).toMatchObject({ error: 'domain_reserved', message: expect.stringContaining('an IP address') });
    }
    for (const domain of ['127.1.', '0x7f000001.']) expect((await add(p.slug, domain)).statusCode, domain).toBe(400);
    for (const domain of ['::1', '[::1]', '::ffff:127.0.0.1', '[::ffff:7f00:1]', 'fe80::1', '2001:db8::1']) {
      const res = await add(p.slug, domain);
      expect(res.statusCode, domain).toBe(400);
      expect(res.json(), domain).toMatchObject({ error: 'invalid_request', message: expect.stringContaining('IPv6') });
    }
    // Names with digits are names: a number only as the last label makes an address.
    for (const domain of ['1password.example', '123.example.com', '0x7f.example.com', 'a0x1.example', '127.1.example']) {
      const res = await add(p.slug, domain);
      expect(res.statusCode, domain).toBe(201);
    }
  });

  it('a numeric claim made before the rule (pending) is never verified, whatever its TXT record says', async () => {
    const p = await projectWithSite('<h1>numeric</h1>');
    await t.platform.db.query(`INSERT INTO project_domains (project_id, domain, token) VALUES ($1, '2130706433', 'tok')`, [p.id]);
    const listed = (await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/domains`, headers: sessionHeaders(owner.cookie) })).json();
    const claim = listed.domains.find((d: { domain: string }) => d.domain === '2130706433');
    txt.set(claim.verification.name, [claim.verification.value]);
    const res = await verify(p.slug, '2130706433');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'domain_reserved' });
  });

  it('a claimed domain serves nothing until the TXT record proves control; then it serves the live deploy', async () => {
    const p = await projectWithSite('<h1>shop</h1>');
    const res = await add(p.slug, 'shop.example.com');
    expect(res.statusCode).toBe(201);
    const { domain } = res.json();
    expect(domain).toMatchObject({ domain: 'shop.example.com', verified: false, verification: { type: 'TXT', name: '_service-challenge.shop.example.com' } });
    expect(domain.verification.value).toMatch(/^service-verify=[0-9a-f]{32}$/);
    // Unverified: the Host is not a site (the API answers).
    const before = await t.app.inject({ method: 'GET', url: '/', headers: { host: 'shop.example.com' } });
    expect(before.body).not.toContain('<h1>shop</h1>');
    const missing = await verify(p.slug, 'shop.example.com');
    expect(missing.statusCode).toBe(409);
    expect(missing.json()).toMatchObject({ error: 'domain_unverified' });
    expect(missing.json().message).toContain('_service-challenge.shop.example.com');
    txt.set('_service-challenge.shop.example.com', ['some other record', domain.verification.value]);
    const ok = await verify(p.slug, 'shop.example.com');
    expect(ok.statusCode).toBe(200);
    expect(ok.json().domain).toMatchObject({ verified: true });
    await new Promise((r) => setTimeout(r, 2_100)); // the site cache
    const after = await t.app.inject({ method: 'GET', url: '/', headers: { host: 'shop.example.com' } });
    expect(after.body).toContain('<h1>shop</h1>');
    const listed = await t.app.inject({ method: 'GET', url: `/v1/projects/${p.slug}/domains`, headers: sessionHeaders(owner.cookie) });
    expect(listed.json().domains).toHaveLength(1);
  });

  it('a domain another project serves is 409 domain_taken; a pending claim elsewhere does not block the owner', async () => {
    const a = await projectWithSite('<h1>a</h1>');
    const b = await projectWithSite('<h1>b</h1>');
    const claimB = (await add(b.slug, 'brand.example.com')).json().domain;
    const claimA = (await add(a.slug, 'brand.example.com')).json().domain;
    txt.set('_service-challenge.brand.example.com', [claimA.verification.value]);
    expect((await verify(a.slug, 'brand.example.com')).statusCode).toBe(200);
    // b's token is not in DNS, and the domain is now a's: b cannot take it.
    txt.set('_service-challenge.brand.example.com', [claimA.verification.value, claimB.verification.value]);
    expect((await verify(b.slug, 'brand.example.com')).statusCode).toBe(404); // its pending claim was dropped
    const again = await add(b.slug, 'brand.example.com');
    expect(again.statusCode).toBe(409);
    expect(again.json().error).toBe('domain_taken');
  });

  it("even a verified row naming the service's host (data from before the rule) never shadows the API", async () => {
    const p = await projectWithSite('<h1>takeover</h1>');
    await t.platform.db.query(
      `INSERT INTO project_domains (project_id, domain, token, verified_at) VALUES ($1, 'localhost', 'x', now()), ($1, '127.0.0.1', 'y', now())`,
      [p.id],
    );
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1']) {
      const res = await t.app.inject({ method: 'GET', url: '/v1/projects', headers: { host, ...sessionHeaders(owner.cookie) } });
      expect(res.statusCode, host).toBe(200);
      expect(res.body).not.toContain('takeover');
    }
  });
});
