import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { previewLinksRepository } from '../../api/projects/preview-links-repository.ts';
import { projectsRepository } from '../../api/projects/projects-repository.ts';
import { installSiteHosting } from '../../api/sites/site-hosting.ts';
import { hashPassword } from '../../platform/passwords.ts';
import { addLiveSite, addPreviewSite, createIngestProject, type IngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { compileSite } from '../build/compile-site.ts';
import { COOKIE } from './preview-gate.ts';
import { createSiteServer, siteServerOf } from './site-server.ts';

/**
 * Issue 42 "Previews that only the team sees", played by an attacker through real HTTP, against both front doors: the
 * edge (uWebSockets.js, the single process) and the API's site hook (Fastify, behind a proxy). A protected project's
 * per-deploy hosts answer the password page (401) for every path, HEAD and Range included, until a right password or
 * a share link sets this host's signed cookie; production hosts stay public.
 */
let edge: TestEdge;
let api: FastifyInstance;
let apiBase: string;
const PASSWORD = 'correct horse battery';
let a: IngestProject;
let b: IngestProject;
const host: Record<string, string> = {};
const secret = '<main>the preview site</main>';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(base: string, h: string, p: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method: opts.method ?? 'GET', headers: { host: h, ...opts.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const form = (password: string, next = '/') => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ password, next }).toString(),
});
const cookieOf = (g: Got) => String(g.headers['set-cookie']?.[0] ?? '').split(';')[0]!;

async function siteDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'protected-'));
  await mkdir(path.join(dir, 'assets'), { recursive: true });
  await writeFile(path.join(dir, 'index.html'), `<!doctype html><title>preview</title>${secret}`);
  await writeFile(path.join(dir, 'assets', 'app-1a2b3c4d.js'), 'export const secret = 1;');
  return dir;
}

async function protect(projectId: string, password: string | null, enabled = true): Promise<void> {
  await projectsRepository.updateProject(
    edge.platform.db,
    projectId,
    { previewProtection: { enabled } },
    password === null ? null : await hashPassword(password),
  );
}

/** The site cache keeps a Host's protection SITE_CACHE_MS (2 s): poll until the new state shows. */
async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('the change did not show');
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  edge = await startTestEdge({}, { sites: true });
  a = await createIngestProject(edge.platform);
  b = await createIngestProject(edge.platform);
  const dir = await siteDir();
  await addLiveSite(edge.platform, a.projectId, dir);
  host.production = `${a.slug}.localhost`;
  host.previewA = `${(await addPreviewSite(edge.platform, a.projectId, dir)).host}.localhost`;
  host.otherPreviewA = `${(await addPreviewSite(edge.platform, a.projectId, dir)).host}.localhost`;
  host.previewB = `${(await addPreviewSite(edge.platform, b.projectId, dir)).host}.localhost`;
  await protect(a.projectId, PASSWORD);
  await protect(b.projectId, PASSWORD);
  api = Fastify();
  installSiteHosting(api, edge.platform, createSiteServer(edge.platform.db, { sitesDomain: 'localhost', limiter: edge.limiter }));
  await api.listen({ port: 0, host: '127.0.0.1' });
  apiBase = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await api?.close();
  await edge?.close();
});

describe.each([
  ['the edge (uWebSockets.js)', () => edge.base],
  ["the API's site hook (Fastify)", () => apiBase],
])('a protected preview through %s', (_name, base) => {
  it('answers the password page (401, no-store, strict CSP) and never a file without a cookie: every path, HEAD, Range', async () => {
    for (const [p, opts] of [
      ['/', {}],
      ['/index.html', {}],
      ['/assets/app-1a2b3c4d.js', {}],
      ['/assets/app-1a2b3c4d.js', { headers: { range: 'bytes=0-5' } }],
      ['/', { method: 'HEAD' }],
      ['/nope', {}],
    ] as const) {
      const g = await request(base(), host.previewA!, p, opts);
      expect([p, g.status, g.body.includes('secret'), g.headers['cache-control']]).toEqual([p, 401, false, 'no-store']);
      expect(g.headers['content-security-policy']).toContain("default-src 'none'");
      expect(g.headers['content-range']).toBeUndefined();
      if (opts.method !== 'HEAD') expect(g.body).toContain('type="password"');
    }
  });

  it('keeps the production host public', async () => {
    const g = await request(base(), host.production!, '/');
    expect([g.status, g.body.includes(secret)]).toEqual([200, true]);
  });

  it('refuses a wrong password (401) and sets the cookie for the right one: host-only, HttpOnly, SameSite=Lax; then serves files privately', async () => {
    const wrong = await request(base(), host.previewA!, '/.cx/auth', form('guess'));
    expect([wrong.status, wrong.body.includes('Wrong password'), wrong.headers['set-cookie']]).toEqual([401, true, undefined]);
    const right = await request(base(), host.previewA!, '/.cx/auth', form(PASSWORD, '/assets/app-1a2b3c4d.js'));
    expect([right.status, right.headers.location]).toEqual([303, '/assets/app-1a2b3c4d.js']);
    const set = String(right.headers['set-cookie']?.[0]);
    expect(set).toMatch(/^__cx_preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    expect(set).not.toMatch(/Domain=/i);
    const file = await request(base(), host.previewA!, '/assets/app-1a2b3c4d.js', { headers: { cookie: cookieOf(right) } });
    expect([file.status, file.body, file.headers['cache-control']]).toEqual([200, 'export const secret = 1;', 'private, max-age=31536000']);
    expect(file.headers.vary).toContain('Cookie');
    const secure = await request(base(), host.previewA!, '/.cx/auth', {
      ...form(PASSWORD),
      headers: { ...form(PASSWORD).headers, 'x-forwarded-proto': 'https' },
    });
    expect(String(secure.headers['set-cookie']?.[0])).toMatch(/; Secure$/);
  });

  it('sends a visitor only to a path on this host after the password', async () => {
    for (const next of ['//evil.example/', '/\\evil.example', 'https://evil.example/']) {
      const g = await request(base(), host.otherPreviewA!, '/.cx/auth', form(PASSWORD, next));
      expect([next, g.status, g.headers.location]).toEqual([next, 303, '/']);
    }
  });

  it("refuses the cookie on another preview host of the same project or another project's, and a forged or expired one", async () => {
    const right = await request(base(), host.previewA!, '/.cx/auth', form(PASSWORD));
    const cookie = cookieOf(right);
    for (const h of [host.otherPreviewA!, host.previewB!]) {
      const g = await request(base(), h, '/', { headers: { cookie } });
      expect([h, g.status, g.body.includes(secret)]).toEqual([h, 401, false]);
    }
    const [payload, sig] = cookie.slice(COOKIE.length + 1).split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const reforged = Buffer.from(JSON.stringify({ ...claims, h: host.otherPreviewA })).toString('base64url');
    const forged = await request(base(), host.otherPreviewA!, '/', { headers: { cookie: `${COOKIE}=${reforged}.${sig}` } });
    expect(forged.status).toBe(401);
    // Signed with the project's real key but expired: refused all the same.
    const key = (await edge.platform.db.query<{ preview_key: string }>('SELECT preview_key FROM projects WHERE id = $1', [a.projectId])).rows[0]!.preview_key;
    const old = Buffer.from(JSON.stringify({ ...claims, e: Math.floor(Date.now() / 1000) - 1 })).toString('base64url');
    const oldSig = createHmac('sha256', key).update(`cx-preview.${old}`).digest('base64url');
    const expired = await request(base(), host.previewA!, '/', { headers: { cookie: `${COOKIE}=${old}.${oldSig}` } });
    expect(expired.status).toBe(401);
    const fresh = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const freshSig = createHmac('sha256', key).update(`cx-preview.${fresh}`).digest('base64url');
    const resigned = await request(base(), host.previewA!, '/', { headers: { cookie: `${COOKIE}=${fresh}.${freshSig}` } });
    expect(resigned.status).toBe(200); // the same claims, correctly signed: the refusals above were for the forgery and the expiry
  });
});

describe("the site's own rules", () => {
  it('cannot take the protection off: its _headers and _redirects apply only behind the cookie, and caching stays private', async () => {
    const dir = await siteDir();
    await writeFile(path.join(dir, '_headers'), '/*\n  Cache-Control: public, max-age=60\n  X-Site: yes\n');
    await writeFile(path.join(dir, '_redirects'), '/* /index.html 200\n');
    await compileSite(dir, { note: () => undefined });
    const p = await createIngestProject(edge.platform);
    const h = `${(await addPreviewSite(edge.platform, p.projectId, dir)).host}.localhost`;
    await protect(p.projectId, PASSWORD);
    for (const base of [edge.base, apiBase]) {
      const page = await request(base, h, '/deep/link');
      expect([page.status, page.headers['cache-control'], page.headers['x-site'], page.body.includes(secret)]).toEqual([401, 'no-store', undefined, false]);
      const cookie = cookieOf(await request(base, h, '/.cx/auth', form(PASSWORD)));
      const served = await request(base, h, '/deep/link', { headers: { cookie } });
      expect([served.status, served.headers['cache-control'], served.headers['x-site'], served.body.includes(secret)]).toEqual([
        200,
        'private, max-age=60',
        'yes',
        true,
      ]);
    }
  });
});

describe('counting and limits', () => {
  it('answers 429 at the 11th try from one address on one host, and counts every refusal by reason', async () => {
    const p = await createIngestProject(edge.platform);
    const h = `${(await addPreviewSite(edge.platform, p.projectId, await siteDir())).host}.localhost`;
    await protect(p.projectId, PASSWORD);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await request(edge.base, h, '/.cx/auth', form(`wrong-${i}`))).status);
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
    const limited = await request(edge.base, h, '/.cx/auth', form(PASSWORD));
    expect([limited.status, limited.headers['retry-after']]).toEqual([429, '60']);
    const stats = siteServerOf(edge.platform).protectionStats;
    expect(stats.wrong_password).toBeGreaterThanOrEqual(10);
    expect(stats.limited).toBeGreaterThanOrEqual(2);
  });

  it("caps the tries per address across a project's hosts: 30 a minute, however many previews it has", async () => {
    const p = await createIngestProject(edge.platform);
    const dir = await siteDir();
    const hosts = await Promise.all([1, 2, 3, 4].map(async () => `${(await addPreviewSite(edge.platform, p.projectId, dir)).host}.localhost`));
    await protect(p.projectId, PASSWORD);
    const statuses: number[] = [];
    for (const h of hosts) for (let i = 0; i < 8; i++) statuses.push((await request(edge.base, h, '/.cx/auth', form(`wrong-${i}`))).status);
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(statuses.slice(30)).toEqual([429, 429]);
  });

  it('bounds the form body: a post past 4 KB is not a password', async () => {
    const g = await request(edge.base, host.previewB!, '/.cx/auth', {
      ...form(PASSWORD),
      body: `next=%2F&pad=${'x'.repeat(5000)}&password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(g.status).toBe(401);
  });
});

describe('password changes and share links', () => {
  it('a new password signs out the cookies of the old one', async () => {
    const p = await createIngestProject(edge.platform);
    const h = `${(await addPreviewSite(edge.platform, p.projectId, await siteDir())).host}.localhost`;
    await protect(p.projectId, 'first password');
    await until(async () => (await request(edge.base, h, '/.cx/auth', form('first password'))).status === 303);
    const cookie = cookieOf(await request(edge.base, h, '/.cx/auth', form('first password')));
    expect((await request(edge.base, h, '/', { headers: { cookie } })).status).toBe(200);
    await protect(p.projectId, 'second password');
    await until(async () => (await request(edge.base, h, '/', { headers: { cookie } })).status === 401);
    expect((await request(apiBase, h, '/', { headers: { cookie } })).status).toBe(401);
  });

  it('a share link sets the cookie (without a password set) until it is revoked; a wrong token is refused', async () => {
    const p = await createIngestProject(edge.platform);
    const h = `${(await addPreviewSite(edge.platform, p.projectId, await siteDir())).host}.localhost`;
    await protect(p.projectId, null);
    const page = await request(edge.base, h, '/');
    expect([page.status, page.body.includes('share link'), page.body.includes('type="password"')]).toEqual([401, true, false]);
    const link = await previewLinksRepository.create(edge.platform.db, p.projectId, null, 7, 50);
    for (const base of [edge.base, apiBase]) {
      const bad = await request(base, h, `/.cx/share/${link!.token}x`);
      expect([bad.status, bad.headers['set-cookie']]).toEqual([401, undefined]);
      const opened = await request(base, h, `/.cx/share/${link!.token}`);
      expect([opened.status, opened.headers.location]).toEqual([303, '/']);
      const cookie = cookieOf(opened);
      await until(async () => (await request(base, h, '/', { headers: { cookie } })).status === 200);
      // A link of another project opens none of this one's previews.
      expect((await request(base, host.previewB!, '/', { headers: { cookie } })).status).toBe(401);
      expect((await request(base, host.previewB!, `/.cx/share/${link!.token}`)).status).toBe(401);
    }
    const cookie = cookieOf(await request(edge.base, h, `/.cx/share/${link!.token}`));
    await previewLinksRepository.revoke(edge.platform.db, p.projectId, link!.row.id);
    await until(async () => (await request(edge.base, h, '/', { headers: { cookie } })).status === 401);
    expect((await request(edge.base, h, `/.cx/share/${link!.token}`)).status).toBe(401);
  });

  it('turning protection off serves the previews to anyone again', async () => {
    const p = await createIngestProject(edge.platform);
    const h = `${(await addPreviewSite(edge.platform, p.projectId, await siteDir())).host}.localhost`;
    await protect(p.projectId, PASSWORD);
    await until(async () => (await request(edge.base, h, '/')).status === 401);
    await protect(p.projectId, PASSWORD, false);
    await until(async () => (await request(edge.base, h, '/')).status === 200);
  });
});
