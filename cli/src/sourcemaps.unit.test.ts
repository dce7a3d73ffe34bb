import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readArtifactBundle } from '../../api/source-maps/artifact-bundle.ts';
import { bundleOf, collectSourceMaps } from './sourcemaps.ts';

/**
 * `cx sourcemaps upload`'s side: what it finds in a build folder and the bundle it makes, read back by the service's own
 * reader, so each map lands under the path its JS file is served at, with the debug id the JS or the map carries.
 */
const ID_JS = '0d2b4d25-8e0a-4c3f-9f59-7a1bde4c55a1';
const ID_MAP = '44522c0c-15b2-5256-a269-29101a91b9a4';
const map = (extra: Record<string, unknown> = {}) => JSON.stringify({ version: 3, sources: ['../src/a.js'], names: [], mappings: 'AAAA', ...extra });

describe('cx sourcemaps upload: collecting and bundling', () => {
  it('finds maps by sourceMappingURL (files and inline data: maps), debug ids from the JS or the map, and skips links', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cx-maps-'));
    await mkdir(path.join(dir, 'assets/chunks'), { recursive: true });
    await writeFile(path.join(dir, 'assets/main-1a2b.js'), `x();\n//# sourceMappingURL=main-1a2b.js.map\n//# debugId=${ID_JS}\n`);
    await writeFile(path.join(dir, 'assets/main-1a2b.js.map'), map());
    await writeFile(
      path.join(dir, 'assets/chunks/c.mjs'),
      `y();\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(map({ debugId: ID_MAP })).toString('base64')}\n`,
    );
    await writeFile(path.join(dir, 'assets/hidden.js.map'), map({ debug_id: ID_MAP }));
    await writeFile(path.join(dir, 'assets/plain.js'), 'no map here\n');
    await symlink('/etc', path.join(dir, 'assets/link'));
    await symlink(path.join(dir, 'assets/main-1a2b.js.map'), path.join(dir, 'assets/linked.js.map'));

    const collected = await collectSourceMaps(dir);
    expect(collected.maps.map((m) => m.rel).sort()).toEqual(['assets/chunks/c.mjs.inline.map', 'assets/hidden.js.map', 'assets/main-1a2b.js.map']);
    expect(collected.sources.map((s) => s.rel).sort()).toEqual(['assets/chunks/c.mjs', 'assets/main-1a2b.js']);

    const read = readArtifactBundle(bundleOf(collected, { project: 'shop' }));
    if (read.kind !== 'ok') throw new Error(JSON.stringify(read));
    expect(read.refused).toEqual([]);
    const by = Object.fromEntries(read.maps.map((m) => [m.mapName, [m.servedPath, m.debugId]]));
    expect(by).toEqual({
      'assets/main-1a2b.js.map': ['/assets/main-1a2b.js', ID_JS],
      'assets/chunks/c.mjs.inline.map': ['/assets/chunks/c.mjs', ID_MAP],
      'assets/hidden.js.map': ['/assets/hidden.js', ID_MAP],
    });
  });

  it('--url-prefix places the folder under a path', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cx-maps-'));
    await writeFile(path.join(dir, 'app.js'), 'x();\n//# sourceMappingURL=app.js.map\n');
    await writeFile(path.join(dir, 'app.js.map'), map());
    const read = readArtifactBundle(bundleOf(await collectSourceMaps(dir), { project: 'shop', urlPrefix: '~/static/js/' }));
    if (read.kind !== 'ok') throw new Error(JSON.stringify(read));
    expect(read.maps.map((m) => m.servedPath)).toEqual(['/static/js/app.js']);
  });

  it('refuses what is not a folder', async () => {
    await expect(collectSourceMaps('/definitely/not/here')).rejects.toThrow(/not a directory/);
  });
});
