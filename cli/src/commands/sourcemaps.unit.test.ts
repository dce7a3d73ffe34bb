import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cx } from './fake-cli.ts';

/**
 * `cx sourcemaps upload <dir>` as a command: the project and folder it takes, what it prints for each outcome of the
 * upload (sentry-cli's options, assemble, chunks, assemble), and its exit codes. What it collects and bundles is
 * ../sourcemaps.unit.test.ts.
 */
const OPTIONS = {
  url: '/api/0/organizations/cx/chunk-upload/',
  chunkSize: 8 * 1024 * 1024,
  chunksPerRequest: 64,
  maxRequestSize: 32 * 1024 * 1024,
  maxFileSize: 128 * 1024 * 1024,
  maxWait: 60,
  concurrency: 1,
  hashAlgorithm: 'sha1',
  compression: [],
  accept: ['artifact_bundles'],
};
const ASSEMBLE = 'POST /api/0/organizations/cx/artifactbundle/assemble/';
/** The service has no chunk yet: assemble names it missing, the chunk goes up, assemble again says what it kept. */
const upload = (final: object) => ({
  'GET /api/0/organizations/cx/chunk-upload/': OPTIONS,
  [ASSEMBLE]: (body: { chunks: string[] }, n: number) => (n === 0 ? { state: 'not_found', missingChunks: body.chunks, detail: null } : final),
  'POST /api/0/organizations/cx/chunk-upload/': { stored: [] },
});

async function build(opts: { debugId?: boolean } = {}): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cx-unit-maps-'));
  const id = opts.debugId ? '\n//# debugId=0d2b4d25-8e0a-4c3f-9f59-7a1bde4c55a1' : '';
  await writeFile(path.join(dir, 'app.js'), `x();\n//# sourceMappingURL=app.js.map${id}\n`);
  await writeFile(path.join(dir, 'app.js.map'), JSON.stringify({ version: 3, sources: ['a.js'], names: [], mappings: 'AAAA' }));
  return dir;
}

describe('cx sourcemaps upload', () => {
  it('uploads the bundle for the project and prints what the service kept', async () => {
    const dir = await build({ debugId: true });
    const r = await cx(['sourcemaps', 'upload', '-p', 'shop', dir], upload({ state: 'ok', missingChunks: [], detail: '1 source map stored', stored: 1 }));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Uploaded: 1 source map stored\n');
    expect(r.stderr).toBe('');
    expect(r.calls.map((c) => `${c.method} ${c.path}`)).toEqual([
      'GET /api/0/organizations/cx/chunk-upload/',
      ASSEMBLE,
      'POST /api/0/organizations/cx/chunk-upload/',
      ASSEMBLE,
    ]);
    expect(r.calls[1]!.body).toMatchObject({ projects: ['shop'] });
  });

  it('says when no file carries a debug id; --json prints the answer', async () => {
    const dir = await build();
    const answer = { state: 'ok', missingChunks: [], detail: '1 source map stored', stored: 1 };
    const r = await cx(['sourcemaps', 'upload', '-p', 'shop', dir], upload(answer));
    expect(r.stderr).toMatch(/none of these files carries a debug id/);
    const j = await cx(['sourcemaps', 'upload', '-p', 'shop', dir, '--json'], upload(answer));
    expect([j.code, JSON.parse(j.stdout)]).toEqual([0, answer]);
  });

  it('exits 1 when the service did not keep the maps, naming its state', async () => {
    const r = await cx(['sourcemaps', 'upload', '-p', 'shop', await build()], upload({ state: 'error', missingChunks: [], detail: 'over the quota' }));
    expect([r.code, r.stderr]).toEqual([1, 'the service did not keep the maps (error): over the quota\n']);
  });

  it('refuses what is not a folder (exit 2) and a folder without maps (exit 1), asking nothing', async () => {
    const missing = await cx(['sourcemaps', 'upload', '-p', 'shop', '/definitely/not/here']);
    expect([missing.code, missing.stderr, missing.calls]).toEqual([2, '/definitely/not/here is not a directory\n', []]);
    const empty = await mkdtemp(path.join(os.tmpdir(), 'cx-unit-maps-'));
    const none = await cx(['sourcemaps', 'upload', '-p', 'shop', empty]);
    expect([none.code, none.calls]).toEqual([1, []]);
    expect(none.stderr).toMatch(/^no source map under /);
  });

  it('needs the folder and the project', async () => {
    const noDir = await cx(['sourcemaps', 'upload', '-p', 'shop']);
    expect([noDir.code, noDir.calls]).toEqual([2, []]);
    expect(noDir.stderr).toMatch(/missing required argument 'dir'/);
    expect((await cx(['sourcemaps', 'upload', await build()])).code).toBe(2);
  });
});
