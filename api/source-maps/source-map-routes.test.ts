import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApi, createCliToken, createKey, createProject, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { cut, makeBundle, mapJson, multipartChunks, sha1 } from '../../test/support/artifact-bundles.ts';
import { buildApp, builtFile, sentryCli, sentryUpload } from '../../test/support/sentry-cli.ts';
import { MAX_ASSEMBLE_CHUNKS } from '../../schemas/api/source-maps.ts';
import { routePath } from '../../schemas/api/client.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { Project } from '../../schemas/api/projects.ts';
import { uploadsRepository } from './uploads-repository.ts';

/**
 * Source maps from builds made elsewhere: the real `@sentry/cli` 3.8 (`sourcemaps inject`, then `sourcemaps upload
 * --url` this API) stores the maps with their debug ids and served paths, with a `cx_live_` key holding
 * `sourcemaps:write` or a member's `cx_cli_` token; everything else is refused with a clear 4xx in the spec's shape.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let owner: SignedInUser;
let project: Project;
let key: string;

beforeAll(async () => {
  t = await buildTestApi();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address() as { port: number };
  base = `http://127.0.0.1:${address.port}`;
  owner = await signUpAndSignIn(t.app, t.platform);
  project = await createProject(t.app, owner.cookie);
  key = (await createKey(t.app, owner.cookie, project.slug, { kind: 'live', scopes: ['sourcemaps:write'] })).token;
});
afterAll(async () => t?.close());

type Row = { served_path: string | null; debug_id: string | null; map_name: string; bundle_id: string | null; deploy_id: string | null; content: Uint8Array };
async function mapsOf(projectId: string): Promise<Row[]> {
  return (
    await t.platform.db.query<Row>(
      'SELECT served_path, debug_id, map_name, bundle_id, deploy_id, content FROM source_maps WHERE project_id = $1 ORDER BY map_name',
      [projectId],
    )
  ).rows;
}

const options = (token: string, org = 'acme') => t.app.inject({ method: 'GET', url: routePath('chunkUploadOptions', { org }), headers: bearer(token) });
const assemble = (token: string, body: unknown, org = 'acme') =>
  t.app.inject({ method: 'POST', url: routePath('assembleArtifactBundle', { org }), headers: bearer(token), payload: body as object });
function postChunks(token: string, parts: Parameters<typeof multipartChunks>[0]) {
  const { body, contentType } = multipartChunks(parts);
  return t.app.inject({
    method: 'POST',
    url: routePath('uploadChunks', { org: 'acme' }),
    headers: { ...bearer(token), 'content-type': contentType },
    payload: body,
  });
}

/** sentry-cli's four calls by hand: assemble (missing chunks), chunks, assemble again. */
async function upload(token: string, blob: Buffer, projects: string[], opts: { gzip?: boolean } = {}) {
  const { checksum, chunks } = cut(blob, LIMITS.sourceMaps.chunkBytes);
  const body = { checksum, chunks: chunks.map((c) => c.checksum), projects };
  const first = await assemble(token, body);
  if (first.statusCode !== 200) return first;
  const missing = new Set<string>(first.json().missingChunks);
  for (const c of chunks.filter((x) => missing.has(x.checksum))) {
    const r = await postChunks(token, [{ bytes: c.bytes, gzip: opts.gzip }]);
    if (r.statusCode !== 200) return r;
  }
  return assemble(token, body);
}

function expectError(res: { statusCode: number; json(): { error?: unknown; message?: unknown } }, status: number, code: string) {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json()).toMatchObject({ error: code, message: expect.any(String) });
}

describe('the real sentry-cli against the API', () => {
  it('inject then upload with a cx_live_ key holding sourcemaps:write: the map is stored with its debug id and served path', async () => {
    const app = await buildApp('key');
    const inject = await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root });
    expect(inject.code, inject.stderr).toBe(0);
    const built = await builtFile(app.dist);
    expect(built.debugId).toMatch(/^[0-9a-f-]{36}$/);

    const run = await sentryUpload(base, key, project.slug, app.dist);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain('File processing complete');

    const rows = (await mapsOf(project.id)).filter((r) => r.debug_id === built.debugId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ served_path: built.servedPath, map_name: `${built.servedPath.slice(1)}.map`, deploy_id: null });
    expect(rows[0]!.bundle_id).toMatch(/^[0-9a-f]{40}$/);
    const map = JSON.parse(Buffer.from(rows[0]!.content).toString());
    expect(map.debugId).toBe(built.debugId);
    expect(map.sourcesContent.join('\n')).toContain('payment failed key');

    // The same build again: nothing to upload, nothing stored twice, and no chunk left behind.
    const again = await sentryUpload(base, key, project.slug, app.dist);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain('Nothing to upload');
    expect((await mapsOf(project.id)).filter((r) => r.debug_id === built.debugId)).toHaveLength(1);
    expect((await t.platform.db.query('SELECT 1 FROM source_map_chunks WHERE owner_id = $1', [project.id])).rows).toEqual([]);
  });

  it("a member's cx_cli_ token uploads to the member's project, named by slug or by the DSN's project number", async () => {
    const cli = (await createCliToken(t.app, owner.cookie)).token;
    const app = await buildApp('cli');
    expect((await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root })).code).toBe(0);
    const built = await builtFile(app.dist);
    const run = await sentryUpload(base, cli, project.slug, app.dist);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect((await mapsOf(project.id)).some((r) => r.debug_id === built.debugId && r.served_path === built.servedPath)).toBe(true);

    const numbered = await createProject(t.app, owner.cookie);
    const number = String((await t.platform.db.query<{ number: string }>('SELECT number FROM projects WHERE id = $1', [numbered.id])).rows[0]!.number);
    const byNumber = await sentryUpload(base, cli, number, app.dist);
    expect(byNumber.code, byNumber.stdout + byNumber.stderr).toBe(0);
    expect((await mapsOf(numbered.id)).map((r) => r.debug_id)).toEqual([built.debugId]);
  });

  it('a key without sourcemaps:write is refused: the CLI fails and the API answers 403 insufficient_scope', async () => {
    const weak = (await createKey(t.app, owner.cookie, project.slug, { kind: 'live', scopes: ['errors:read'] })).token;
    const app = await buildApp('weak');
    const run = await sentryUpload(base, weak, project.slug, app.dist, { extra: [] });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('403');
    expectError(await options(weak), 403, 'insufficient_scope');
    expectError(await assemble(weak, { checksum: 'a'.repeat(40), chunks: ['a'.repeat(40)], projects: [project.slug] }), 403, 'insufficient_scope');
    expectError(await postChunks(weak, [{ bytes: Buffer.from('x') }]), 403, 'insufficient_scope');
  });

  it("another project's slug is refused for a key and for a non-member's token, exactly as a slug that does not exist", async () => {
    const other = await createProject(t.app, owner.cookie);
    const app = await buildApp('other');
    expect((await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root })).code).toBe(0);
    const run = await sentryUpload(base, key, other.slug, app.dist);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('may not upload');
    expect(await mapsOf(other.id)).toEqual([]);

    const stranger = await signUpAndSignIn(t.app, t.platform);
    const strangerCli = (await createCliToken(t.app, stranger.cookie)).token;
    const body = (slug: string) => ({ checksum: 'a'.repeat(40), chunks: ['b'.repeat(40)], projects: [slug] });
    const refusals = [
      await assemble(key, body(other.slug)),
      await assemble(key, { ...body(project.slug), projects: [project.slug, other.slug] }),
      await assemble(strangerCli, body(project.slug)),
      await assemble(strangerCli, body('no-such-project')),
    ];
    for (const r of refusals) expectError(r, 403, 'forbidden');
    expect(refusals[2]!.json().message.replace(project.slug, 'X')).toBe(refusals[3]!.json().message.replace('no-such-project', 'X'));
  });
});

describe('the upload routes by hand', () => {
  it("answers the options sentry-cli needs, at the root with sentry-cli's trailing slashes", async () => {
    const res = await options(key, 'my-org');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toMatchObject({
      url: '/api/0/organizations/my-org/chunk-upload/',
      chunkSize: LIMITS.sourceMaps.chunkBytes,
      hashAlgorithm: 'sha1',
      compression: ['gzip'],
      accept: expect.arrayContaining(['artifact_bundles_v2']),
    });
  });

  it('stores a bundle sent as sentry-cli sends it, gzip chunks or not, across several chunks; refused maps are in the answer', async () => {
    const id = '0d2b4d25-8e0a-4c3f-9f59-7a1bde4c55a1';
    // Base64 of random bytes deflates to about 3/4: the bundle spans three chunks.
    const padding = randomBytes(LIMITS.sourceMaps.chunkBytes * 2).toString('base64');
    const blob = makeBundle({
      'files/_/_/js/app.js': { type: 'minified_source', url: '~/js/app.js', headers: { 'debug-id': id, sourcemap: 'app.js.map' }, content: 'x' },
      'files/_/_/js/app.js.map': { type: 'source_map', url: '~/js/app.js.map', headers: { 'debug-id': id }, content: mapJson({ source: padding }) },
      'files/_/_/js/bad.js.map': { type: 'source_map', url: '~/js/bad.js.map', content: '{"version":3' },
    });
    expect(cut(blob, LIMITS.sourceMaps.chunkBytes).chunks.length).toBeGreaterThanOrEqual(3);
    for (const gzip of [true, false]) {
      const p = await createProject(t.app, owner.cookie);
      const k = (await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['sourcemaps:write'] })).token;
      const res = await upload(k, blob, [p.slug], { gzip });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ state: 'ok', missingChunks: [], stored: 1, refused: { map_invalid_json: 1 } });
      expect(res.json().detail).toContain('js/bad.js.map (map_invalid_json');
      expect((await mapsOf(p.id)).map((r) => [r.served_path, r.debug_id, r.map_name])).toEqual([['/js/app.js', id, 'js/app.js.map']]);
      // sentry-cli's poll, or the same upload again: already kept.
      const again = await upload(k, blob, [p.slug], { gzip });
      expect(again.json()).toMatchObject({ state: 'ok', missingChunks: [], detail: 'already stored' });
      expect(await mapsOf(p.id)).toHaveLength(1);
    }
  });

  it('a chunk whose bytes do not hash to its name is 400, and nothing is held', async () => {
    const res = await postChunks(key, [{ bytes: Buffer.from('the real bytes'), filename: sha1(Buffer.from('other bytes')) }]);
    expectError(res, 400, 'invalid_request');
    expect(res.json().message).toContain('hash');
    expect((await uploadsRepository.presentChunks(t.platform.db, project.id, [sha1(Buffer.from('other bytes'))])).size).toBe(0);
    // A filename that is no SHA-1, and a gzip part that is not gzip.
    expectError(await postChunks(key, [{ bytes: Buffer.from('x'), filename: '../../etc/passwd' }]), 400, 'invalid_request');
    expectError(await postChunks(key, [{ bytes: Buffer.from('x'), name: 'file_gzip' }]), 400, 'invalid_request');
    expectError(await postChunks(key, [{ bytes: Buffer.from('x'), name: 'other' }]), 400, 'invalid_request');
  });

  it('a chunk past chunkBytes (or a gzip part inflating past it), a body past chunkRequestBytes, too many parts: 413', async () => {
    const over = Buffer.alloc(LIMITS.sourceMaps.chunkBytes + 1, 0x61);
    expectError(await postChunks(key, [{ bytes: over, gzip: true }]), 413, 'payload_too_large');
    const big = Buffer.alloc(LIMITS.sourceMaps.chunkRequestBytes + 10, 0x61);
    expectError(await postChunks(key, [{ bytes: big }]), 413, 'payload_too_large');
    const many = Array.from({ length: 9 }, (_, i) => ({ bytes: Buffer.from(`chunk ${i}`) }));
    expectError(await postChunks(key, many), 413, 'payload_too_large');
  });

  it('a malformed multipart body, no boundary, or JSON where chunks go: a clear 4xx', async () => {
    const url = routePath('uploadChunks', { org: 'acme' });
    const send = (contentType: string, payload: string | Buffer) =>
      t.app.inject({ method: 'POST', url, headers: { ...bearer(key), 'content-type': contentType }, payload });
    expectError(
      await send('multipart/form-data; boundary=abc', '--abc\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nhalf'),
      400,
      'invalid_request',
    );
    expectError(await send('multipart/form-data', 'anything'), 400, 'invalid_request');
    expectError(await send('multipart/form-data; boundary=abc', '--abc--\r\n'), 400, 'invalid_request');
    expectError(await send('multipart/form-data; boundary=abc', Buffer.from([0, 1, 2, 3, 255])), 400, 'invalid_request');
    expectError(await send('application/json', '{"file":"x"}'), 415, 'unsupported_media_type');
    expectError(await send('application/octet-stream', 'x'), 415, 'unsupported_media_type');
  });

  it('a zip bomb, too many files, a path outside, a bundle past the chunks one may name: refused as a 4xx, chunks deleted', async () => {
    const p = await createProject(t.app, owner.cookie);
    const k = (await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['sourcemaps:write'] })).token;
    const bombFiles: Record<string, { type: string; url: string; content: Uint8Array }> = {};
    const fifteen = new Uint8Array(15 * 1024 * 1024).fill(0x20);
    for (let i = 0; i < 10; i++) bombFiles[`files/_/_/b${i}.js.map`] = { type: 'source_map', url: `~/b${i}.js.map`, content: fifteen };
    const bomb = await upload(k, makeBundle(bombFiles), [p.slug]);
    expectError(bomb, 413, 'payload_too_large');
    expect(bomb.json().reason).toBe('bundle_too_large');

    const one = new Uint8Array(LIMITS.sourceMaps.mapBytes + 1).fill(0x20);
    const tooBig = await upload(k, makeBundle({ 'files/_/_/x.js.map': { type: 'source_map', url: '~/x.js.map', content: one } }), [p.slug]);
    expectError(tooBig, 413, 'payload_too_large');

    const files: Record<string, { type: string; url: string; content: string }> = {};
    for (let i = 0; i <= LIMITS.sourceMaps.uploadFiles; i++) files[`files/_/_/f${i}.js`] = { type: 'minified_source', url: `~/f${i}.js`, content: '' };
    expectError(await upload(k, makeBundle(files), [p.slug]), 413, 'payload_too_large');

    const outside = await upload(k, makeBundle({ 'files/_/_/x.js.map': { type: 'source_map', url: '~/../../x.js.map', content: mapJson() } }), [p.slug]);
    expectError(outside, 400, 'invalid_request');
    expect(outside.json().reason).toBe('path_outside');

    const noMaps = await upload(k, makeBundle({ 'files/_/_/x.js': { type: 'minified_source', url: '~/x.js', content: 'x' } }), [p.slug]);
    expectError(noMaps, 400, 'invalid_request');
    expect(noMaps.json().message).toContain('no source map');

    const notZip = await upload(k, Buffer.from('PK but not really a zip file at all'), [p.slug]);
    expectError(notZip, 400, 'invalid_request');

    const chunks = Array.from({ length: MAX_ASSEMBLE_CHUNKS + 1 }, (_, i) => sha1(Buffer.from(String(i))));
    expectError(await assemble(k, { checksum: 'c'.repeat(40), chunks, projects: [p.slug] }), 413, 'payload_too_large');

    expect(await mapsOf(p.id)).toEqual([]);
    expect((await t.platform.db.query('SELECT 1 FROM source_map_chunks WHERE owner_id = $1', [p.id])).rows).toEqual([]);
  });

  it('chunks that do not join to the checksum named are refused (and dropped)', async () => {
    const a = Buffer.from('first chunk');
    const b = Buffer.from('second chunk');
    expect((await postChunks(key, [{ bytes: a }, { bytes: b }])).statusCode).toBe(200);
    const res = await assemble(key, { checksum: sha1(Buffer.from('something else')), chunks: [sha1(a), sha1(b)], projects: [project.slug] });
    expectError(res, 400, 'invalid_request');
    expect((await uploadsRepository.presentChunks(t.platform.db, project.id, [sha1(a), sha1(b)])).size).toBe(0);
  });

  it("one owner's chunks are not another's: a second project's key sees them missing", async () => {
    const p = await createProject(t.app, owner.cookie);
    const k = (await createKey(t.app, owner.cookie, p.slug, { kind: 'live', scopes: ['sourcemaps:write'] })).token;
    const bytes = Buffer.from(`private chunk ${p.id}`);
    expect((await postChunks(key, [{ bytes }])).statusCode).toBe(200);
    const res = await assemble(k, { checksum: sha1(bytes), chunks: [sha1(bytes)], projects: [p.slug] });
    expect(res.json()).toEqual({ state: 'not_found', missingChunks: [sha1(bytes)], detail: null });
  });

  it('chunks not assembled are swept an hour after their upload', async () => {
    const old = Buffer.from(`abandoned ${Date.now()}`);
    await uploadsRepository.putChunks(t.platform.db, project.id, [{ checksum: sha1(old), content: old }], Date.now() - LIMITS.sourceMaps.chunkTtlMs - 60_000);
    const fresh = Buffer.from(`fresh ${Date.now()}`);
    expect((await postChunks(key, [{ bytes: fresh }])).statusCode).toBe(200);
    const held = await uploadsRepository.presentChunks(t.platform.db, project.id, [sha1(old), sha1(fresh)]);
    expect([...held]).toEqual([sha1(fresh)]);
  });

  it("past one upload's bytes an owner's oldest chunks go first, so an abandoned upload never blocks the next", async () => {
    const owner = `prj_trim_${Date.now()}`;
    const now = Date.now();
    const chunk = (i: number) => {
      const content = Buffer.alloc(1000, i);
      return { checksum: sha1(content), content };
    };
    for (let i = 0; i < 5; i++) await uploadsRepository.putChunks(t.platform.db, owner, [chunk(i)], now - (5 - i) * 1000);
    expect(await uploadsRepository.trimChunks(t.platform.db, owner, 3000)).toBe(2);
    const held = await uploadsRepository.presentChunks(
      t.platform.db,
      owner,
      [0, 1, 2, 3, 4].map((i) => chunk(i).checksum),
    );
    expect([...held].sort()).toEqual([2, 3, 4].map((i) => chunk(i).checksum).sort());
  });

  it('the routes are in the OpenAPI document with their credentials', async () => {
    const doc = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    const assembleOp = doc.paths['/api/0/organizations/{org}/artifactbundle/assemble/']?.post;
    expect(assembleOp?.requestBody).toBeDefined();
    expect(assembleOp?.security).toEqual([{ cliToken: [] }, { apiKey: ['sourcemaps:write'] }]);
    expect(Object.keys(doc.paths['/api/0/organizations/{org}/chunk-upload/'] ?? {}).sort()).toEqual(['get', 'post']);
  });

  it('an invalid assemble body is 400 with the fields named', async () => {
    for (const body of [{}, { checksum: 'xyz', chunks: [], projects: [] }, { checksum: 'a'.repeat(40), chunks: ['a'.repeat(40)], projects: 'web' }]) {
      const res = await assemble(key, body);
      expectError(res, 400, 'invalid_request');
    }
  });
});
