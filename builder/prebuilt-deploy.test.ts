import { existsSync, mkdirSync, mkdtempSync, readdirSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Header, Pax } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prebuiltRefusals, STALE_UPLOAD_MS, sweepStaleUploads } from './prebuilt-deploy.ts';
import {
  bearer,
  buildTestApi,
  createCliToken,
  createKey,
  createProject,
  sessionHeaders,
  signUpAndSignIn,
  type SignedInUser,
} from '../test/support/accounts.ts';

/**
 * Issue 42 "Deploy without git", through HTTP: `POST /v1/projects/:slug/deploys/prebuilt` with a .tar.gz. A good
 * tarball is a ready deploy served at its host (production goes live, a preview does not); an attacker's tarball
 * (links, `..`, absolute paths, devices, a gzip bomb, too many files, not gzip at all) is refused whole with its reason,
 * and leaves no deploy row and no file behind. Archives are written header by header, as a hostile client would.
 */
type Api = Awaited<ReturnType<typeof buildTestApi>>;
let t: Api;
let dataDir: string;
let owner: SignedInUser;
/** The owner's `cx_cli_` token: uploads are the CLI's (a session's cookie writes only JSON bodies). */
let cli: Record<string, string>;
const MAX_FILES = 20;
const MAX_BYTES = 256 * 1024;
const MAX_FILE_BYTES = 128 * 1024;

interface Entry {
  path: string;
  type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'FIFO';
  body?: string | Buffer;
  linkpath?: string;
  /** The size the header claims (default: the body's). */
  size?: number;
  /** Write the path in a pax record (long paths). */
  pax?: boolean;
}

const block = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);

/** A tar archive of exactly these entries, headers as given (nothing normalised). */
function tarOf(entries: Entry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const body = e.body === undefined ? Buffer.alloc(0) : Buffer.from(e.body);
    const type = e.type ?? 'File';
    const fields = { path: e.path, type, size: e.size ?? (type === 'File' ? body.length : 0), mode: 0o644, mtime: new Date(0), linkpath: e.linkpath };
    if (e.pax) parts.push(new Pax({ path: e.path }).encode());
    const h = new Header({ ...fields, path: e.pax ? 'long' : e.path });
    h.encode();
    parts.push(h.block!);
    if (type === 'File' && body.length) parts.push(block(body));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}
const tgz = (entries: Entry[]) => gzipSync(tarOf(entries));

async function deployCount(projectId: string): Promise<number> {
  const r = await t.platform.db.query<{ n: string }>('SELECT count(*) AS n FROM deploys WHERE project_id = $1', [projectId]);
  return Number(r.rows[0]!.n);
}

function upload(slug: string, body: Buffer, query = '', headers: Record<string, string> = cli, type = 'application/gzip') {
  return t.app.inject({ method: 'POST', url: `/v1/projects/${slug}/deploys/prebuilt${query}`, headers: { ...headers, 'content-type': type }, payload: body });
}

const site = (extra: Entry[] = []): Entry[] => [
  { path: './', type: 'Directory' },
  { path: './index.html', body: '<h1>prebuilt</h1>' },
  { path: './assets/', type: 'Directory' },
  { path: './assets/app.js', body: 'console.log("hi")\n//# sourceMappingURL=app.js.map\n' },
  { path: './assets/app.js.map', body: JSON.stringify({ version: 3, sources: ['app.ts'], names: [], mappings: 'AAAA' }) },
  ...extra,
];

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'prebuilt-data-'));
  t = await buildTestApi({
    env: { DATA_DIR: dataDir, ARTIFACT_MAX_FILES: String(MAX_FILES), ARTIFACT_MAX_BYTES: String(MAX_BYTES), ARTIFACT_MAX_FILE_BYTES: String(MAX_FILE_BYTES) },
  });
  owner = await signUpAndSignIn(t.app, t.platform);
  cli = bearer((await createCliToken(t.app, owner.cookie)).token);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

/** Nothing of a refused upload is left under DATA_DIR (no staging folder, no artifact). */
const leftovers = () => [
  ...(existsSync(path.join(dataDir, 'uploads')) ? readdirSync(path.join(dataDir, 'uploads')) : []),
  ...(existsSync(path.join(dataDir, 'artifacts')) ? readdirSync(path.join(dataDir, 'artifacts')) : []),
];

/**
 * One POST over a real socket to the listening service: the body written in chunks as a client streams a large file
 * (the server may answer before it has read them all). Resolves with the answer; a write the server no longer reads
 * (EPIPE, ECONNRESET after its answer) is not the test's failure, the answer is what counts.
 */
function postOverSocket(port: number, url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: url, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    let at = 0;
    const writeMore = () => {
      while (at < body.length) {
        const chunk = body.subarray(at, at + 64 * 1024);
        at += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', writeMore);
      }
      req.end();
    };
    writeMore();
  });
}

describe('POST /v1/projects/:slug/deploys/prebuilt over a real socket (the Fastify service listening on 127.0.0.1)', () => {
  let port: number;
  beforeAll(async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });

  it('a tarball with a link inside, then megabytes the server never reads, gets the JSON refusal; the service keeps serving', async () => {
    const p = await createProject(t.app, owner.cookie);
    // The link first, then 4 MB of incompressible files: the refusal comes while the client is still sending.
    const after = Array.from({ length: 40 }, (_, i) => ({ path: `pad${i}.bin`, body: randomBytes(100 * 1024) }));
    const hostile = tgz(site([{ path: './passwd', type: 'SymbolicLink', linkpath: '/etc/passwd' }, ...after]));
    expect(hostile.length).toBeGreaterThan(4_000_000);
    const before = prebuiltRefusals.link ?? 0;
    const url = `/v1/projects/${p.slug}/deploys/prebuilt`;
    const refused = await postOverSocket(port, url, { ...cli, 'content-type': 'application/gzip' }, hostile);
    expect(refused.status, refused.text).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({ error: 'invalid_artifact', reason: 'link', entry: 'passwd' });
    expect(prebuiltRefusals.link).toBe(before + 1);
    expect(await deployCount(p.id)).toBe(0);
    await expect.poll(() => leftovers().filter((n) => n.startsWith('upl_'))).toEqual([]);
    // A hard link, the same way.
    const hard = await postOverSocket(
      port,
      url,
      { ...cli, 'content-type': 'application/gzip' },
      tgz(site([{ path: 'hard', type: 'Link', linkpath: 'index.html' }])),
    );
    expect([hard.status, JSON.parse(hard.text).reason]).toEqual([400, 'link']);

    // The service keeps serving, over new connections: a good upload is a ready deploy, and its site is served.
    const good = await postOverSocket(port, url, { ...cli, 'content-type': 'application/gzip' }, tgz(site()));
    expect(good.status, good.text).toBe(201);
    expect(JSON.parse(good.text).deploy).toMatchObject({ status: 'ready' });
    const home = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', headers: { host: `${p.slug}.localhost` } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        })
        .on('error', reject);
    });
    expect([home.status, home.text]).toEqual([200, expect.stringContaining('<h1>prebuilt</h1>')]);
    expect(await deployCount(p.id)).toBe(1);
  });
});

describe('POST /v1/projects/:slug/deploys/prebuilt', () => {
  it('a good tarball becomes a ready production deploy served live at the project host; a preview is not live', async () => {
    const p = await createProject(t.app, owner.cookie, { defaultBranch: 'main' });
    const res = await upload(p.slug, tgz(site()), '?gitSha=abcdef1');
    expect(res.statusCode, res.body).toBe(201);
    const deploy = res.json().deploy;
    expect(deploy).toMatchObject({ status: 'ready', environment: 'production', branch: 'main', gitSha: 'abcdef1', trigger: { kind: 'upload' } });
    expect(deploy.url).toContain(deploy.id.replace(/_/g, '-'));
    const home = await t.app.inject({ url: '/', headers: { host: `${p.slug}.localhost` } });
    expect([home.statusCode, home.body]).toEqual([200, expect.stringContaining('<h1>prebuilt</h1>')]);
    const live = await t.app.inject({ url: '/assets/app.js', headers: { host: `${p.slug}.localhost` } });
    expect([live.statusCode, live.body]).toEqual([200, expect.stringContaining('console.log')]);
    // Finished as a build is: its source map kept privately, its log says what happened.
    const maps = await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${deploy.id}/sourcemaps`, headers: sessionHeaders(owner.cookie) });
    expect(maps.json().maps.map((m: { mapName: string }) => m.mapName)).toEqual(['assets/app.js.map']);
    const log = await t.app.inject({ url: `/v1/projects/${p.slug}/deploys/${deploy.id}/logs`, headers: sessionHeaders(owner.cookie) });
    expect(JSON.stringify(log.json())).toMatch(/prebuilt upload: 3 files/);

    const preview = await upload(p.slug, tgz([{ path: 'index.html', body: 'preview' }]), '?environment=preview&branch=feature-x');
    expect(preview.statusCode, preview.body).toBe(201);
    expect(preview.json().deploy).toMatchObject({ status: 'ready', environment: 'preview', branch: 'feature-x' });
    const still = await t.app.inject({ url: '/', headers: { host: `${p.slug}.localhost` } });
    expect(still.body).toContain('<h1>prebuilt</h1>');
    // Another branch than the default one is a preview unless told otherwise.
    const other = await upload(p.slug, tgz([{ path: 'index.html', body: 'x' }]), '?branch=dev');
    expect(other.json().deploy).toMatchObject({ environment: 'preview', branch: 'dev' });
  });

  it('a deploys:write key uploads; a key without it, or another tenant, cannot (403 / 404)', async () => {
    const p = await createProject(t.app, owner.cookie);
    const writer = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:write', 'deploys:read'] });
    const reader = await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['deploys:read'] });
    expect((await upload(p.slug, tgz(site()), '', bearer(writer.token))).statusCode).toBe(201);
    expect((await upload(p.slug, tgz(site()), '', bearer(reader.token))).statusCode).toBe(403);
    const stranger = await signUpAndSignIn(t.app, t.platform);
    const res = await upload(p.slug, tgz(site()), '', bearer((await createCliToken(t.app, stranger.cookie)).token));
    expect(res.statusCode).toBe(404);
    // A console session's cookie writes JSON only (cross-site forms cannot post a tarball with it).
    expect((await upload(p.slug, tgz(site()), '', sessionHeaders(owner.cookie))).statusCode).toBe(403);
    expect(await deployCount(p.id)).toBe(1);
  });

  const hostile: Array<[string, Entry[], string, string | null]> = [
    ['a symbolic link inside the output', site([{ path: './passwd', type: 'SymbolicLink', linkpath: '/etc/passwd' }]), 'link', 'passwd'],
    ['a symbolic link to a file beside it', site([{ path: 'copy.html', type: 'SymbolicLink', linkpath: 'index.html' }]), 'link', 'copy.html'],
    ['a hard link', site([{ path: 'hard', type: 'Link', linkpath: 'index.html' }]), 'link', 'hard'],
    ['a .. entry', site([{ path: '../../escape.html', body: 'x' }]), 'parent_path', '../../escape.html'],
    ['a .. in the middle', site([{ path: 'assets/../../escape.html', body: 'x' }]), 'parent_path', 'assets/../../escape.html'],
    ['an absolute path', site([{ path: '/tmp/abs.html', body: 'x' }]), 'absolute_path', '/tmp/abs.html'],
    ['a device', site([{ path: 'null', type: 'CharacterDevice' }]), 'special_file', 'null'],
    ['a fifo', site([{ path: 'pipe', type: 'FIFO' }]), 'special_file', 'pipe'],
    ['a path over 1,024 characters', site([{ path: `${'d/'.repeat(520)}x.html`, body: 'x', pax: true }]), 'path_too_long', expect.any(String)],
    ['a name given twice', site([{ path: 'index.html', body: 'again' }]), 'duplicate_entry', 'index.html'],
  ];
  for (const [what, entries, reason, entry] of hostile) {
    it(`refuses ${what}: 400 invalid_artifact (${reason}), no deploy, no file`, async () => {
      const p = await createProject(t.app, owner.cookie);
      const before = prebuiltRefusals[reason as keyof typeof prebuiltRefusals] ?? 0;
      const res = await upload(p.slug, tgz(entries));
      expect(res.statusCode, res.body).toBe(400);
      expect(prebuiltRefusals[reason as keyof typeof prebuiltRefusals]).toBe(before + 1);
      expect(res.json()).toMatchObject({ error: 'invalid_artifact', reason, entry });
      expect(await deployCount(p.id)).toBe(0);
      expect(leftovers()).not.toContainEqual(expect.stringMatching(/^upl_/));
      expect(existsSync('/tmp/abs.html')).toBe(false);
    });
  }

  it('refuses what is over the artifact limits with 413 and its reason: too many files, a file too large, a gzip bomb', async () => {
    const p = await createProject(t.app, owner.cookie);
    const many = Array.from({ length: MAX_FILES + 1 }, (_, i) => ({ path: `f${i}.html`, body: 'x' }));
    const tooMany = await upload(p.slug, tgz(many));
    expect([tooMany.statusCode, tooMany.json().reason]).toEqual([413, 'too_many_files']);
    const big = await upload(p.slug, tgz([{ path: 'big.bin', body: Buffer.alloc(MAX_FILE_BYTES + 1) }]));
    expect([big.statusCode, big.json()]).toEqual([413, expect.objectContaining({ error: 'payload_too_large', reason: 'file_too_large', entry: 'big.bin' })]);
    // Many files each under the file limit, together past ARTIFACT_MAX_BYTES.
    const sum = Array.from({ length: 3 }, (_, i) => ({ path: `part${i}.bin`, body: Buffer.alloc(MAX_FILE_BYTES - 1) }));
    expect((await upload(p.slug, tgz(sum))).json().reason).toBe('artifact_too_large');
    // A bomb: a header that lies small, then megabytes of zeros that inflate from a few KB; cut at the limit.
    const bomb = gzipSync(Buffer.concat([tarOf([{ path: 'a.html', body: 'a' }]).subarray(0, 1024), Buffer.alloc(64 * 1024 * 1024)]));
    expect(bomb.length).toBeLessThan(200 * 1024);
    const cut = await upload(p.slug, bomb);
    expect([cut.statusCode, cut.json().reason]).toEqual([413, 'artifact_too_large']);
    // Random bytes past what the artifact could take compressed.
    const huge = await upload(p.slug, gzipSync(randomBytes(MAX_BYTES + MAX_FILES * 4096 + 128 * 1024)));
    expect([huge.statusCode, huge.json().reason]).toEqual([413, 'upload_too_large']);
    expect(await deployCount(p.id)).toBe(0);
    expect(leftovers()).not.toContainEqual(expect.stringMatching(/^upl_/));
  });

  it('refuses a body that is not a .tar.gz (400) or not sent as gzip (415), and an empty archive', async () => {
    const p = await createProject(t.app, owner.cookie);
    const notGzip = await upload(p.slug, Buffer.from('<h1>just html</h1>'));
    expect([notGzip.statusCode, notGzip.json()]).toEqual([400, expect.objectContaining({ error: 'invalid_artifact', reason: 'not_gzip' })]);
    const notTar = await upload(p.slug, gzipSync(Buffer.from('not a tar archive at all '.repeat(100))));
    expect([notTar.statusCode, notTar.json().reason]).toEqual([400, 'not_tar']);
    const twice = await upload(p.slug, gzipSync(tgz(site())));
    expect([twice.statusCode, twice.json().reason]).toEqual([400, 'not_tar']);
    const empty = await upload(p.slug, tgz([{ path: './', type: 'Directory' }]));
    expect([empty.statusCode, empty.json().reason]).toEqual([400, 'empty']);
    const json = await upload(p.slug, Buffer.from('{}'), '', cli, 'application/json');
    expect([json.statusCode, json.json().error]).toEqual([415, 'unsupported_media_type']);
    expect((await upload(p.slug, tgz(site()), '?environment=staging')).statusCode).toBe(400);
    expect((await upload(p.slug, tgz(site()), '?branch=..bad')).statusCode).toBe(400);
    expect(await deployCount(p.id)).toBe(0);
  });

  it('a production upload while a production deploy is building is 409 production_deploy_busy; a preview still goes', async () => {
    const p = await createProject(t.app, owner.cookie, { defaultBranch: 'main' });
    await t.platform.db.query(
      `INSERT INTO deploys (id, project_id, branch, environment, status, created_at) VALUES ($1, $2, 'main', 'production', 'building', now())`,
      [`dep_busy${randomBytes(4).toString('hex')}`, p.id],
    );
    const busy = await upload(p.slug, tgz(site()));
    expect([busy.statusCode, busy.json().error]).toEqual([409, 'production_deploy_busy']);
    expect((await upload(p.slug, tgz(site()), '?environment=preview')).statusCode).toBe(201);
    expect(await deployCount(p.id)).toBe(2);
  });
});

describe('POST /v1/projects/:slug/deploys without a build source', () => {
  it('is 409 source_missing saying how to set one, and leaves no deploy', async () => {
    const p = await createProject(t.app, owner.cookie);
    const res = await t.app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/deploys`, headers: sessionHeaders(owner.cookie), payload: {} });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ error: 'source_missing', message: expect.stringMatching(/cx link --repo[\s\S]*--prebuilt/) });
    expect(await deployCount(p.id)).toBe(0);
  });
});

describe('a prebuilt upload past the quota', () => {
  let q: Api;
  beforeAll(async () => {
    q = await buildTestApi({
      env: {
        DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'prebuilt-quota-')),
        ARTIFACT_MAX_BYTES: String(8 * 1024 * 1024),
        ARTIFACT_MAX_FILE_BYTES: String(8 * 1024 * 1024),
        ARTIFACTS_PROJECT_MAX_MB: '1',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await q?.close();
  });

  it("is 413 quota_exceeded naming the project's limit, cut off before the file is written whole; no deploy", async () => {
    const user = await signUpAndSignIn(q.app, q.platform);
    const p = await createProject(q.app, user.cookie);
    const token = bearer((await createCliToken(q.app, user.cookie)).token);
    const send = (body: Buffer) =>
      q.app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/deploys/prebuilt`,
        headers: { ...token, 'content-type': 'application/gzip' },
        payload: body,
      });
    const res = await send(tgz([{ path: 'big.bin', body: Buffer.alloc(1536 * 1024) }]));
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json()).toMatchObject({ error: 'payload_too_large', reason: 'quota_exceeded', message: expect.stringContaining('ARTIFACTS_PROJECT_MAX_MB') });
    const r = await q.platform.db.query<{ n: string }>('SELECT count(*) AS n FROM deploys WHERE project_id = $1', [p.id]);
    expect(Number(r.rows[0]!.n)).toBe(0);
    // What fits still goes.
    expect((await send(tgz([{ path: 'index.html', body: 'small' }]))).statusCode).toBe(201);
  });
});

describe('staging folders a killed process left', () => {
  it("are removed once past any upload's time; younger ones (an upload in flight) and other names stay", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'prebuilt-stale-'));
    const uploads = path.join(dir, 'uploads');
    for (const name of ['upl_old', 'upl_new', 'other']) mkdirSync(path.join(uploads, name, 'assets'), { recursive: true });
    const old = new Date(Date.now() - STALE_UPLOAD_MS - 60_000);
    utimesSync(path.join(uploads, 'upl_old'), old, old);
    utimesSync(path.join(uploads, 'other'), old, old);
    expect(await sweepStaleUploads(dir, Date.now())).toBe(1);
    expect(readdirSync(uploads).sort()).toEqual(['other', 'upl_new']);
    expect(await sweepStaleUploads(path.join(dir, 'missing'), Date.now())).toBe(0);
  });
});
