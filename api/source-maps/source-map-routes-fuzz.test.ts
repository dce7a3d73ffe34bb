import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApi, createKey, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { cut, makeBundle, mapJson, multipartChunks, sha1 } from '../../test/support/artifact-bundles.ts';
import { prng } from '../../test/support/prng.ts';
import { routePath } from '../../schemas/api/client.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * The source map upload routes under random input, with a valid key (what a tenant, or anyone holding a leaked key,
 * can send): random methods, content types, multipart bodies and assemble bodies; then real uploads of bundles with
 * random bytes flipped, cut or spliced (the ZIP reader's hostile input). Whatever arrives, the answer is JSON below
 * 500 and the service keeps serving. Seeded, so a failure reproduces.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let key: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi();
  const user = await signUpAndSignIn(t.app, t.platform);
  slug = (await createProject(t.app, user.cookie)).slug;
  key = (await createKey(t.app, user.cookie, slug, { kind: 'live', scopes: ['sourcemaps:write'] })).token;
});
afterAll(async () => t?.close());

function check(res: { statusCode: number; body: string }, what: string, seen: Map<number, number>) {
  seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
  expect(res.statusCode, `${what} -> ${res.body.slice(0, 300)}`).toBeLessThan(500);
  expect(() => JSON.parse(res.body), `${what} -> ${res.body.slice(0, 300)}`).not.toThrow();
  if (res.statusCode >= 400) expect(typeof JSON.parse(res.body).error).toBe('string');
}

describe('source map upload routes under random input', () => {
  it('requests of any shape: never 5xx, always JSON', async () => {
    const rnd = prng(37);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const hex = () => sha1(bytes(8));
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const org = pick(['acme', encodeURIComponent(text(10)), '%00', '..%2F..', 'a'.repeat(300)]);
      const route = pick(['uploadChunks', 'assembleArtifactBundle'] as const);
      const url = routePath(route, { org: 'x' }).replace('/x/', `/${org}/`);
      const method = pick<'POST' | 'GET' | 'PUT' | 'DELETE'>(['POST', 'POST', 'POST', 'GET', 'PUT']);
      const real = multipartChunks(Array.from({ length: Math.floor(rnd() * 3) + 1 }, () => ({ bytes: bytes(Math.floor(rnd() * 200)), gzip: rnd() < 0.5 })));
      const body = pick([
        Buffer.alloc(0),
        bytes(Math.floor(rnd() * 3000)),
        real.body,
        real.body.subarray(0, Math.floor(rnd() * real.body.length)),
        Buffer.from(JSON.stringify({ checksum: hex(), chunks: [hex(), hex()], projects: [slug] })),
        Buffer.from(JSON.stringify({ checksum: text(40), chunks: [text(5)], projects: [text(30)], version: 5 })),
        Buffer.from(JSON.stringify({ checksum: hex(), chunks: Array.from({ length: 300 }, hex), projects: [slug, slug] })),
        Buffer.from('{"checksum":'),
        Buffer.from(text(300)),
      ]);
      const contentType = pick([
        real.contentType,
        'multipart/form-data',
        'multipart/form-data; boundary=',
        `multipart/form-data; boundary=${text(5)}`,
        'application/json',
        'application/octet-stream',
        'text/plain',
        '',
      ]);
      const headers: Record<string, string> = { ...bearer(key) };
      if (contentType) headers['content-type'] = contentType;
      const res = await t.app.inject({ method, url, headers, payload: method === 'GET' ? undefined : body });
      check(res, `${method} ${url} (${contentType})`, seen);
    }
    expect(seen.get(200)).toBeGreaterThan(0);
    expect((await t.app.inject({ url: '/v1/' })).statusCode).toBe(200);
  });

  it('bundles with random damage, assembled for real: never 5xx, always JSON', async () => {
    const rnd = prng(3737);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const good = makeBundle({
      'files/_/_/assets/app.js': { type: 'minified_source', url: '~/assets/app.js', headers: { sourcemap: 'app.js.map' }, content: 'x' },
      'files/_/_/assets/app.js.map': { type: 'source_map', url: '~/assets/app.js.map', content: mapJson({ debugId: '44522c0c-15b2-5256-a269-29101a91b9a4' }) },
      'files/_/_/assets/b.js.map': { type: 'source_map', url: '~/assets/b.js.map', content: mapJson() },
    });
    const seen = new Map<number, number>();
    for (let i = 0; i < 120; i++) {
      const blob = Buffer.from(good);
      switch (pick(['flip', 'flip', 'cut', 'splice', 'header'])) {
        case 'flip':
          for (let n = 0; n < 1 + Math.floor(rnd() * 8); n++) blob[Math.floor(rnd() * blob.length)] = Math.floor(rnd() * 256);
          break;
        case 'cut':
          blob.fill(0, Math.floor(rnd() * blob.length));
          break;
        case 'splice': {
          const at = Math.floor(rnd() * blob.length);
          blob.copy(blob, at, Math.floor(rnd() * blob.length));
          break;
        }
        case 'header':
          blob.writeUInt32LE(Math.floor(rnd() * 0xffffffff), Math.floor(rnd() * (blob.length - 4)));
          break;
      }
      const { checksum, chunks } = cut(blob, LIMITS.sourceMaps.chunkBytes);
      const body = { checksum, chunks: chunks.map((c) => c.checksum), projects: [slug] };
      const first = await t.app.inject({ method: 'POST', url: routePath('assembleArtifactBundle', { org: 'acme' }), headers: bearer(key), payload: body });
      check(first, 'assemble (first)', seen);
      const { body: parts, contentType } = multipartChunks(chunks.map((c) => ({ bytes: c.bytes, gzip: true })));
      check(
        await t.app.inject({
          method: 'POST',
          url: routePath('uploadChunks', { org: 'acme' }),
          headers: { ...bearer(key), 'content-type': contentType },
          payload: parts,
        }),
        'chunks',
        seen,
      );
      check(
        await t.app.inject({ method: 'POST', url: routePath('assembleArtifactBundle', { org: 'acme' }), headers: bearer(key), payload: body }),
        'assemble',
        seen,
      );
    }
    expect(seen.get(400)).toBeGreaterThan(0);
    expect((await t.app.inject({ url: '/v1/' })).statusCode).toBe(200);
  });
});
