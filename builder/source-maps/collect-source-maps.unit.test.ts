import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, readFileSync, symlinkSync, writeFileSync, writeSync, ftruncateSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import type { NewSourceMap } from '../../domain/source-maps/source-maps-repository.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { collectSourceMaps, REFUSAL_LINES, TAIL_BYTES, type SourceMapLimits } from './collect-source-maps.ts';

/** The builder's source map collector (issue 37) over real esbuild output, and over outputs made to attack it. */
const tmp = (prefix: string) => mkdtempSync(path.join(os.tmpdir(), `maps-${prefix}-`));

/** A tiny app (a TS module, a CSS file it imports) bundled as a site would be: minified, content-hashed names. */
async function bundle(sourcemap: 'linked' | 'inline' | 'external', extraLines = 0): Promise<string> {
  const src = tmp('src');
  mkdirSync(path.join(src, 'src'));
  const filler = Array.from({ length: extraLines }, (_, i) => `export const line${i} = () => 'padding line number ${i} of the source';`).join('\n');
  writeFileSync(path.join(src, 'src', 'util.ts'), `export function explode(what: string): never {\n  throw new Error('boom: ' + what);\n}\n${filler}\n`);
  writeFileSync(path.join(src, 'src', 'main.ts'), `import './main.css';\nimport { explode } from './util';\ndocument.body.onclick = () => explode('click');\n`);
  writeFileSync(path.join(src, 'src', 'main.css'), 'body { color: red; }\n');
  const out = tmp('out');
  await build({
    entryPoints: [path.join(src, 'src', 'main.ts')],
    bundle: true,
    minify: true,
    sourcemap,
    entryNames: '[name]-[hash]',
    outdir: path.join(out, 'assets'),
    absWorkingDir: src,
    logLevel: 'silent',
  });
  writeFileSync(path.join(out, 'index.html'), '<script src="/assets/main.js"></script>');
  return out;
}

async function collect(root: string, limits?: SourceMapLimits) {
  const kept: NewSourceMap[] = [];
  const lines: string[] = [];
  const result = await collectSourceMaps({ root, note: (t) => lines.push(t), keep: async (m) => void kept.push(m), limits });
  return { kept, lines, result };
}

const assets = (root: string) => readdirSync(path.join(root, 'assets'));
const tinyMap = (file = 'x.js') => JSON.stringify({ version: 3, file, sources: ['src/x.ts'], names: [], mappings: 'AAAA' });

describe('collecting a build output’s source maps', () => {
  it('keeps the maps esbuild links, indexed by the path the site serves each file at', async () => {
    const root = await bundle('linked');
    const js = assets(root).find((f) => f.endsWith('.js'))!;
    const css = assets(root).find((f) => f.endsWith('.css'))!;
    expect(js).toMatch(/^main-[A-Z0-9]{8}\.js$/);
    const { kept, lines, result } = await collect(root);
    expect(kept.map((m) => [m.mapName, m.servedPath]).sort()).toEqual(
      [
        [`assets/${css}.map`, `/assets/${css}`],
        [`assets/${js}.map`, `/assets/${js}`],
      ].sort(),
    );
    const map = JSON.parse(kept.find((m) => m.servedPath === `/assets/${js}`)!.content.toString());
    expect(map.sources).toContainEqual(expect.stringMatching(/(^|\/)src\/util\.ts$/));
    expect(map.names).toContain('explode');
    expect(result).toMatchObject({ kept: 2, refused: {} });
    expect(lines).toEqual([`kept 2 source maps (${Math.ceil(result.bytes / 1024)} KB) for symbolication; refused 0`]);
  });

  it('keeps inline data: maps, a long one read back past the last 4 KB to its line’s start', async () => {
    const root = await bundle('inline', 200);
    const js = assets(root).find((f) => f.endsWith('.js'))!;
    const size = readFileSync(path.join(root, 'assets', js)).length;
    const tail = readFileSync(path.join(root, 'assets', js), 'utf8')
      .split('\n')
      .at(-2)!;
    expect(tail.length).toBeGreaterThan(TAIL_BYTES); // the comment alone is longer than the tail read first
    expect(size).toBeGreaterThan(TAIL_BYTES);
    const { kept } = await collect(root);
    const inline = kept.find((m) => m.servedPath === `/assets/${js}`)!;
    expect(inline.mapName).toBe(`assets/${js} (inline)`);
    expect(JSON.parse(inline.content.toString()).sourcesContent.join('')).toContain('padding line number 199');
    expect(kept.map((m) => m.mapName)).toContain(`assets/${assets(root).find((f) => f.endsWith('.css'))!} (inline)`);
  });

  it('keeps a map no file names (esbuild "external", a hidden source map) for the file its name minus .map names', async () => {
    const root = await bundle('external');
    const js = assets(root).find((f) => f.endsWith('.js'))!;
    expect(readFileSync(path.join(root, 'assets', js), 'utf8')).not.toContain('sourceMappingURL');
    const { kept } = await collect(root);
    expect(kept.find((m) => m.mapName === `assets/${js}.map`)?.servedPath).toBe(`/assets/${js}`);
    // A loose map whose file is not in the output is still kept (found by debug id), with no served path.
    writeFileSync(path.join(root, 'orphan.js.map'), tinyMap());
    expect((await collect(root)).kept.find((m) => m.mapName === 'orphan.js.map')).toMatchObject({ servedPath: undefined });
  });

  it("reads debug ids from sentry-cli's `//# debugId=` comment and the map's debugId", async () => {
    const root = await bundle('linked');
    execFileSync('npx', ['sentry-cli', 'sourcemaps', 'inject', root], { stdio: 'ignore', env: { ...process.env, SENTRY_LOAD_DOTENV: '0' } });
    const js = assets(root).find((f) => f.endsWith('.js'))!;
    const id = /\/\/# debugId=([0-9a-f-]{36})/.exec(readFileSync(path.join(root, 'assets', js), 'utf8'))![1]!;
    const { kept } = await collect(root);
    expect(kept.find((m) => m.servedPath === `/assets/${js}`)?.debugId).toBe(id);
    // The map's own id (`debugId`, sentry-cli 2.x's `debug_id`) when no file carries one.
    writeFileSync(path.join(root, 'lone.js.map'), JSON.stringify({ ...JSON.parse(tinyMap()), debug_id: '85314830-023F-4CF1-A267-535F4E37BB17' }));
    expect((await collect(root)).kept.find((m) => m.mapName === 'lone.js.map')?.debugId).toBe('85314830-023f-4cf1-a267-535f4e37bb17');
  });
});

describe('a hostile output', () => {
  it('refuses links, directories, FIFOs, a map naming itself and URLs leaving the output, each with its reason; never follows out', async () => {
    const root = tmp('hostile');
    mkdirSync(path.join(root, 'dir.js.map'));
    writeFileSync(path.join(root, 'dir.js.map', 'inner.js'), 'x()\n//# sourceMappingURL=../dir.js.map');
    symlinkSync('/etc/passwd', path.join(root, 'passwd.js.map'));
    symlinkSync('/etc', path.join(root, 'etc'));
    execFileSync('mkfifo', [path.join(root, 'fifo.js.map')]);
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const js: Record<string, string> = {
      'self.js': 'a()\n//# sourceMappingURL=self.js',
      'up.js': 'a()\n//# sourceMappingURL=../../etc/passwd',
      'rooted.js': 'a()\n//# sourceMappingURL=/../etc/passwd',
      'through-link.js': 'a()\n//# sourceMappingURL=etc/passwd',
      'to-link.js': 'a()\n//# sourceMappingURL=passwd.js.map',
      'to-fifo.js': 'a()\n//# sourceMappingURL=pipe',
      'http.js': 'a()\n//# sourceMappingURL=https://evil.example/x.js.map',
      'file.js': 'a()\n//# sourceMappingURL=file:///etc/passwd',
      'proto.js': 'a()\n//# sourceMappingURL=//evil.example/x.js.map',
      'gone.js': 'a()\n//# sourceMappingURL=gone.js.map',
      'bad-json.js': 'a()\n//# sourceMappingURL=bad-json.js.map',
      'v2.js': 'a()\n//# sourceMappingURL=v2.js.map',
      'html.js': 'a()\n//# sourceMappingURL=index.html',
      'ok.js': 'a()\n//# sourceMappingURL=ok.js.map',
    };
    for (const [name, body] of Object.entries(js)) writeFileSync(path.join(root, name), body);
    writeFileSync(path.join(root, 'index.html'), '<h1>hi</h1>');
    writeFileSync(path.join(root, 'bad-json.js.map'), '{"version": 3,');
    writeFileSync(path.join(root, 'v2.js.map'), JSON.stringify({ version: 2, mappings: '' }));
    writeFileSync(path.join(root, 'ok.js.map'), tinyMap('ok.js'));
    const { kept, lines, result } = await collect(root);
    expect(kept.map((m) => [m.mapName, m.servedPath])).toEqual([['ok.js.map', '/ok.js']]);
    expect(result.refused).toEqual({
      map_not_a_file: 4, // dir.js.map, fifo.js.map, passwd.js.map (a link), pipe
      map_is_itself: 1,
      map_outside_output: 3, // ../../etc/passwd, /../etc/passwd, etc/passwd through the link
      map_url_not_relative: 3,
      map_missing: 1,
      map_invalid_json: 2, // bad-json.js.map, and index.html named by html.js
      not_a_source_map: 1,
    });
    const line = (file: string) => lines.find((l) => l.includes(`) ${file}: `) || l.includes(`): ${file}: `) || l.includes(`(named by ${file})`));
    expect(line('self.js')).toMatch(/^source map refused \(map_is_itself\): self\.js: /);
    expect(line('up.js')).toMatch(/\(map_outside_output\)/);
    expect(line('through-link.js')).toMatch(/\(map_outside_output\)/);
    expect(line('fifo.js.map')).toMatch(/\(map_not_a_file\)/);
    expect(line('to-fifo.js')).toMatch(/\(map_not_a_file\): pipe \(named by to-fifo\.js\): a special file/);
    expect(line('html.js')).toMatch(/^source map refused \(map_invalid_json\): index\.html \(named by html\.js\): /);
    expect(line('gone.js')).toBe('source map refused (map_missing): gone.js.map (named by gone.js): not in the output');
    expect(lines.join('\n')).not.toMatch(/root:/);
    expect(lines.at(-1)).toMatch(/^kept 1 source map \(1 KB\) for symbolication; refused 15: /);
  });

  it('refuses a sparse 1 GB .map by its size without reading it, and reads a 3 GB JS file only at its end', async () => {
    const root = tmp('huge');
    const sparse = (name: string, size: number, tail = '') => {
      const fd = openSync(path.join(root, name), 'w');
      ftruncateSync(fd, size);
      if (tail) writeSync(fd, tail, size - Buffer.byteLength(tail));
      closeSync(fd);
    };
    sparse('huge.js.map', 1024 ** 3);
    // Past 2 GB, reading the file whole would throw (ERR_FS_FILE_TOO_LARGE): only its last bytes are read.
    sparse('huge.js', 3 * 1024 ** 3, '\n//# sourceMappingURL=real.js.map\n');
    writeFileSync(path.join(root, 'real.js.map'), tinyMap('huge.js'));
    const { kept, lines, result } = await collect(root);
    expect(kept.map((m) => [m.mapName, m.servedPath])).toEqual([['real.js.map', '/huge.js']]);
    expect(result.refused).toEqual({ map_too_large: 1 });
    expect(lines[0]).toBe(`source map refused (map_too_large): huge.js.map: ${1024 ** 3} bytes, more than ${LIMITS.sourceMaps.mapBytes}`);
  });

  it('reads a base64 tail back only as far as an inline map of the per-map size encodes to', async () => {
    const root = tmp('b64');
    const limits = { mapBytes: 30_000, mapsPerDeploy: 10, bytesPerDeploy: 1_000_000 };
    writeFileSync(path.join(root, 'endless.js'), `a()\n//# sourceMappingURL=data:application/json;base64,${'A'.repeat(60_000)}`);
    writeFileSync(path.join(root, 'noline.js'), 'A'.repeat(200_000));
    const big = Buffer.from(JSON.stringify({ version: 3, mappings: '', sources: [], sourcesContent: ['x'.repeat(20_000)] })).toString('base64');
    writeFileSync(path.join(root, 'fits.js'), `a()\n//# sourceMappingURL=data:application/json;charset=utf-8;base64,${big}\n`);
    const { kept, result } = await collect(root, limits);
    expect(kept.map((m) => m.mapName)).toEqual(['fits.js (inline)']);
    expect(result.refused).toEqual({ map_too_large: 2 });
  });

  it('keeps at most the maps and bytes a deploy may have, the maps files name first; refusal lines are capped', async () => {
    const root = tmp('many');
    const n = LIMITS.sourceMaps.mapsPerDeploy + 100;
    for (let i = 0; i < n; i++) writeFileSync(path.join(root, `m${String(i).padStart(4, '0')}.js.map`), tinyMap());
    writeFileSync(path.join(root, 'zz-named.js'), 'a()\n//# sourceMappingURL=m9999.js.map');
    writeFileSync(path.join(root, 'm9999.js.map'), tinyMap());
    const { kept, lines, result } = await collect(root);
    expect(result).toMatchObject({ kept: LIMITS.sourceMaps.mapsPerDeploy, refused: { too_many_maps: n + 1 - LIMITS.sourceMaps.mapsPerDeploy } });
    expect(kept[0]).toMatchObject({ mapName: 'm9999.js.map', servedPath: '/zz-named.js' });
    expect(lines.filter((l) => l.startsWith('source map refused (too_many_maps)'))).toHaveLength(REFUSAL_LINES);
    expect(lines.at(-1)).toBe(
      `kept ${LIMITS.sourceMaps.mapsPerDeploy} source maps (${Math.ceil(result.bytes / 1024)} KB) for symbolication; refused 101: too_many_maps 101`,
    );

    const bytes = tmp('bytes');
    for (const name of ['a', 'b', 'c']) writeFileSync(path.join(bytes, `${name}.js.map`), tinyMap().padEnd(400, ' '));
    const capped = await collect(bytes, { mapBytes: 1000, mapsPerDeploy: 10, bytesPerDeploy: 1000 });
    expect(capped.kept.map((m) => m.mapName)).toEqual(['a.js.map', 'b.js.map']);
    expect(capped.result.refused).toEqual({ deploy_maps_too_large: 1 });
  });
});
