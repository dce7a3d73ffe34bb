import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../schemas/limits.ts';
import { makeBundle, mapJson } from '../../test/support/artifact-bundles.ts';
import { readArtifactBundle, sitePath } from './artifact-bundle.ts';

/**
 * Reading sentry-cli's artifact bundles: the maps, their served paths and debug ids as the processor finds them, and
 * every bound a hostile bundle meets (files, declared and actual sizes, paths that climb out, broken ZIPs).
 */
const ID = '44522c0c-15b2-5256-a269-29101a91b9a4';

function realBundle(opts: { sysb?: boolean } = {}) {
  return makeBundle(
    {
      'files/_/_/assets/main-3f9a2c1b.js': {
        type: 'minified_source',
        url: '~/assets/main-3f9a2c1b.js',
        headers: { 'debug-id': ID, sourcemap: 'main-3f9a2c1b.js.map' },
        content: 'function o(){throw new Error("payment failed")}\n//# sourceMappingURL=main-3f9a2c1b.js.map\n',
      },
      'files/_/_/assets/main-3f9a2c1b.js.map': {
        type: 'source_map',
        url: '~/assets/main-3f9a2c1b.js.map',
        headers: { 'Debug-Id': ID.toUpperCase() },
        content: mapJson({ debugId: ID }),
      },
    },
    opts,
  );
}

describe('readArtifactBundle', () => {
  it("reads sentry-cli's SYSB bundle and a plain ZIP alike: each map with its served path and debug id", () => {
    for (const sysb of [true, false]) {
      const r = readArtifactBundle(realBundle({ sysb }));
      expect(r.kind).toBe('ok');
      if (r.kind !== 'ok') return;
      expect(r.files).toBe(2);
      expect(r.refused).toEqual([]);
      expect(r.maps).toHaveLength(1);
      expect(r.maps[0]).toMatchObject({ mapName: 'assets/main-3f9a2c1b.js.map', servedPath: '/assets/main-3f9a2c1b.js', debugId: ID });
      expect(JSON.parse(r.maps[0]!.content.toString()).debugId).toBe(ID);
    }
  });

  it('takes the served path from the JS file that names the map, else the map path without .map; the debug id from the map when no header', () => {
    const r = readArtifactBundle(
      makeBundle({
        'files/https/cdn.example.com/static/app.min.js': {
          type: 'minified_source',
          url: 'https://cdn.example.com/static/app.min.js?v=2',
          headers: { SourceMap: '../maps/app.js.map' },
          content: 'x',
        },
        'files/https/cdn.example.com/maps/app.js.map': { type: 'source_map', url: 'https://cdn.example.com/maps/app.js.map', content: mapJson() },
        'files/_/_/other.js.map': { type: 'source_map', url: '~/other.js.map', content: mapJson({ debugId: ID.replace(/-/g, '') }) },
        'files/_/_/weird': { type: 'source_map', url: '~/no suffix', content: mapJson() },
      }),
    );
    if (r.kind !== 'ok') throw new Error(JSON.stringify(r));
    const by = Object.fromEntries(r.maps.map((m) => [m.mapName, m]));
    expect(by['maps/app.js.map']).toMatchObject({ servedPath: '/static/app.min.js', debugId: undefined });
    expect(by['other.js.map']).toMatchObject({ servedPath: '/other.js', debugId: ID });
    expect(by['no%20suffix']).toMatchObject({ servedPath: undefined });
  });

  it('refuses a map that is not one, and keeps the others (reason per map)', () => {
    const r = readArtifactBundle(
      makeBundle({
        'files/_/_/a.js.map': { type: 'source_map', url: '~/a.js.map', content: mapJson() },
        'files/_/_/b.js.map': { type: 'source_map', url: '~/b.js.map', content: '{"version":3,' },
        'files/_/_/c.js.map': { type: 'source_map', url: '~/c.js.map', content: '{"version":2,"mappings":""}' },
      }),
    );
    if (r.kind !== 'ok') throw new Error(JSON.stringify(r));
    expect(r.maps.map((m) => m.mapName)).toEqual(['a.js.map']);
    expect(r.refused.map((x) => [x.mapName, x.reason])).toEqual([
      ['b.js.map', 'map_invalid_json'],
      ['c.js.map', 'not_a_source_map'],
    ]);
  });

  it('a zip bomb: maps declaring more than uploadBytes together refuse the bundle before anything is inflated', () => {
    const big = new Uint8Array(15 * 1024 * 1024).fill(0x20); // deflates to ~15 KB
    const files: Record<string, { type: string; url: string; content: Uint8Array }> = {};
    const n = Math.ceil(LIMITS.sourceMaps.uploadBytes / big.length) + 1;
    for (let i = 0; i < n; i++) files[`files/_/_/m${i}.js.map`] = { type: 'source_map', url: `~/m${i}.js.map`, content: big };
    const bundle = makeBundle(files);
    expect(bundle.length).toBeLessThan(1024 * 1024);
    expect(readArtifactBundle(bundle)).toMatchObject({ kind: 'refused', reason: 'bundle_too_large' });
  });

  it('a map declaring more than mapBytes is refused unread', () => {
    const huge = new Uint8Array(LIMITS.sourceMaps.mapBytes + 1).fill(0x20);
    const r = readArtifactBundle(
      makeBundle({
        'files/_/_/huge.js.map': { type: 'source_map', url: '~/huge.js.map', content: huge },
        'files/_/_/ok.js.map': { type: 'source_map', url: '~/ok.js.map', content: mapJson() },
      }),
    );
    if (r.kind !== 'ok') throw new Error(JSON.stringify(r));
    expect(r.maps.map((m) => m.mapName)).toEqual(['ok.js.map']);
    expect(r.refused).toMatchObject([{ mapName: 'huge.js.map', reason: 'map_too_large' }]);
  });

  it('an entry that lies about its size inflates no further than it declared (the map is then refused, not a crash)', () => {
    const bundle = makeBundle({ 'files/_/_/x.js.map': { type: 'source_map', url: '~/x.js.map', content: mapJson() } }, { sysb: false });
    // Swap the entry's data for 50 MB of deflated spaces, keeping the declared sizes of the small map.
    const bomb = deflateRawSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
    const lying = spliceEntryData(bundle, 'files/_/_/x.js.map', bomb);
    const r = readArtifactBundle(lying);
    if (r.kind !== 'ok') throw new Error(JSON.stringify(r));
    expect(r.maps).toEqual([]);
    expect(r.refused[0]).toMatchObject({ reason: 'map_invalid_json' });
  });

  it('more files than uploadFiles refuse the bundle', () => {
    const files: Record<string, { type: string; url: string; content: string }> = {};
    for (let i = 0; i <= LIMITS.sourceMaps.uploadFiles; i++) files[`files/_/_/f${i}.js`] = { type: 'minified_source', url: `~/f${i}.js`, content: '' };
    expect(readArtifactBundle(makeBundle(files))).toMatchObject({ kind: 'refused', reason: 'bundle_too_many_files' });
  });

  it('a manifest naming a path outside (a url or an entry that climbs with .., a backslash, a NUL) refuses the bundle', () => {
    const cases: Array<[string, string]> = [
      ['files/_/_/x.js.map', '~/../../etc/passwd.map'],
      ['files/_/_/x.js.map', '~/a/%2e%2e/%2E%2E/b.js.map'],
      ['files/_/_/x.js.map', '~/a\\..\\b.js.map'],
      ['files/_/_/x.js.map', '~/a\u0000.js.map'],
      ['../../x.js.map', '~/x.js.map'],
      ['/abs/x.js.map', '~/x.js.map'],
      ['files/../../x.js.map', '~/x.js.map'],
    ];
    for (const [name, url] of cases) {
      const r = readArtifactBundle(makeBundle({ [name]: { type: 'source_map', url, content: mapJson() } }));
      expect(r, `${name} ${url}`).toMatchObject({ kind: 'refused', reason: 'path_outside' });
    }
  });

  it('refuses what is not a bundle: random bytes, a truncated ZIP, no manifest, a manifest that is not JSON or names absent entries', () => {
    const good = realBundle();
    const refusals = [
      readArtifactBundle(Buffer.from('not a zip at all')),
      readArtifactBundle(new Uint8Array(0)),
      readArtifactBundle(good.subarray(0, good.length - 30)),
      readArtifactBundle(makeBundle({}, { manifest: '{"files":' })),
      readArtifactBundle(
        makeBundle({}, { manifest: '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[' }),
      ),
      readArtifactBundle(makeBundle({}, { manifest: '{"files":[]}' })),
      readArtifactBundle(makeBundle({}, { manifest: JSON.stringify({ files: { 'files/x.map': { type: 'source_map', url: '~/x.map' } } }) })),
    ];
    for (const r of refusals) expect(r.kind).toBe('refused');
    expect(refusals.map((r) => (r.kind === 'refused' ? r.reason : r.kind))).toEqual([
      'bundle_unreadable',
      'bundle_unreadable',
      'bundle_unreadable',
      'manifest_invalid',
      'manifest_invalid',
      'manifest_invalid',
      'manifest_invalid',
    ]);
  });
});

describe('sitePath', () => {
  it("is the path a site serves a manifest url at: sentry-cli's ~/, a full URL's path, a bare path", () => {
    expect(sitePath('~/assets/index.js')).toBe('/assets/index.js');
    expect(sitePath('~assets/index.js')).toBe('/assets/index.js');
    expect(sitePath('https://cdn.example.com/static/js/a.js?x=1#h')).toBe('/static/js/a.js');
    expect(sitePath('app:///main.jsbundle')).toBe('/main.jsbundle');
    expect(sitePath('assets/a b.js')).toBe('/assets/a%20b.js');
    expect(sitePath('~/a/./b.js')).toBe('/a/b.js');
    expect(sitePath('~/../x.js')).toBeUndefined();
    expect(sitePath('~/%ZZ')).toBeUndefined();
    expect(sitePath(`~/${'a'.repeat(3000)}`)).toBeUndefined();
  });
});

/** A ZIP (no SYSB) with one entry's compressed data replaced, its declared sizes kept. */
function spliceEntryData(zip: Buffer, name: string, data: Buffer): Buffer {
  // Local header: signature, ..., compressed size at 18, name length at 26, extra length at 28.
  const at = zip.indexOf(Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04])]), zip.indexOf(Buffer.from(name)) - 30);
  const nameLen = zip.readUInt16LE(at + 26);
  const extraLen = zip.readUInt16LE(at + 28);
  const compressed = zip.readUInt32LE(at + 18);
  const start = at + 30 + nameLen + extraLen;
  const before = zip.subarray(0, start);
  const after = zip.subarray(start + compressed);
  const out = Buffer.concat([before, data, after]);
  const shift = data.length - compressed;
  // Fix the offsets the central directory holds: every local header after this one, and the directory's own offset.
  const eocd = out.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const cdOffset = out.readUInt32LE(eocd + 16) + shift;
  out.writeUInt32LE(cdOffset, eocd + 16);
  let p = cdOffset;
  const entries = out.readUInt16LE(eocd + 10);
  for (let i = 0; i < entries; i++) {
    const local = out.readUInt32LE(p + 42);
    if (local > at) out.writeUInt32LE(local + shift, p + 42);
    // The spliced entry's compressed size grows; its uncompressed size stays as declared.
    if (out.subarray(p + 46, p + 46 + out.readUInt16LE(p + 28)).toString() === name) out.writeUInt32LE(data.length, p + 20);
    p += 46 + out.readUInt16LE(p + 28) + out.readUInt16LE(p + 30) + out.readUInt16LE(p + 32);
  }
  return out;
}
