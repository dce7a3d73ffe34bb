import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { describe, expect, it } from 'vitest';
import type { BuildSettings, Deploy } from '../../../schemas/api/deploys.ts';
import { RawBody } from '../client.ts';
import { cx, refusal } from './fake-cli.ts';

/**
 * Issue 42: `cx deploy --prebuilt <dir>` (the directory packed as a .tar.gz, streamed to POST .../deploys/prebuilt with
 * a progress bar on a terminal), `cx link` (the build source through PATCH .../deploys/settings), and `cx deploy` on a
 * project without a source (says how to set one, exits 1).
 */
const ready: Deploy = {
  id: 'dep_9',
  projectId: 'prj_1',
  branch: 'main',
  environment: 'production',
  status: 'ready',
  gitSha: null,
  trigger: { kind: 'upload', id: null },
  createdAt: '2025-01-02T03:04:05.000Z',
  startedAt: null,
  finishedAt: null,
  failureReason: null,
  exitCode: null,
  framework: null,
  url: 'https://dep-9.example',
  guard: null,
};

async function built(extra?: (dir: string) => Promise<void>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cx-dist-'));
  await writeFile(path.join(dir, 'index.html'), '<h1>built</h1>');
  await mkdir(path.join(dir, 'assets'));
  await writeFile(path.join(dir, 'assets', 'app.js'), 'console.log(1)');
  await mkdir(path.join(dir, '.git'));
  await writeFile(path.join(dir, '.git', 'HEAD'), 'ref: refs/heads/main');
  await extra?.(dir);
  return dir;
}

/** The entries of the .tar.gz a command streamed, read as the service would. */
async function entriesOf(body: unknown): Promise<Array<{ path: string; type: string; text: string }>> {
  expect(body).toBeInstanceOf(RawBody);
  const raw = body as RawBody;
  expect(raw.type).toBe('application/gzip');
  const chunks: Buffer[] = [];
  for await (const c of raw.bytes) chunks.push(Buffer.from(c));
  const gz = Buffer.concat(chunks);
  expect(gz.length).toBe(raw.length);
  const found: Array<{ path: string; type: string; text: string }> = [];
  await new Promise<void>((resolve, reject) => {
    const p = new Parser();
    p.on('entry', (e: ReadEntry) => {
      let text = '';
      e.on('data', (d: Buffer) => (text += d));
      e.on('end', () => found.push({ path: e.path, type: e.type, text }));
    });
    p.on('end', resolve);
    p.on('error', reject);
    p.end(gunzipSync(gz));
  });
  return found;
}

describe('cx deploy --prebuilt', () => {
  it('packs the directory (no .git), uploads it as production and prints where the deploy is served', async () => {
    const dir = await built();
    let sent: Awaited<ReturnType<typeof entriesOf>> = [];
    const r = await cx(['deploy', '-p', 'shop', '--prebuilt', dir], {
      'POST /projects/shop/deploys/prebuilt': async (body: unknown) => {
        sent = await entriesOf(body);
        return { deploy: ready };
      },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.calls.map((c) => `${c.method} ${c.path}`)).toEqual(['POST /projects/shop/deploys/prebuilt']);
    expect(sent.filter((e) => e.type === 'File').map((e) => [e.path.replace(/^\.\//, ''), e.text])).toEqual([
      ['index.html', '<h1>built</h1>'],
      ['assets/app.js', 'console.log(1)'],
    ]);
    expect(sent.some((e) => e.path.includes('.git'))).toBe(false);
    expect(r.stderr).toMatch(/^Packed 2 files \(28 bytes\) from .*\nUploading 0\.0 MB\nUploaded 0\.0 MB\n$/);
    expect(r.stdout).toBe('Ready dep_9 at https://dep-9.example\n');
  });

  it('--preview --branch ask for a preview of that branch; on a terminal a progress bar reaches 100%', async () => {
    const dir = await built();
    const r = await cx(
      ['deploy', '-p', 'shop', '--prebuilt', dir, '--preview', '--branch', 'feat'],
      {
        'POST /projects/shop/deploys/prebuilt?environment=preview&branch=feat': async (body: unknown) => {
          await entriesOf(body);
          return { deploy: { ...ready, environment: 'preview', branch: 'feat' } };
        },
      },
      { tty: true },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/\r\[#{30}\] 100% 0\.0 MB \/ 0\.0 MB/);
    expect(r.stderr).toMatch(/Uploaded 0\.0 MB\n$/);
  });

  it('--json prints the deploy only', async () => {
    const dir = await built();
    const r = await cx(['deploy', '-p', 'shop', '--prebuilt', dir, '--json'], {
      'POST /projects/shop/deploys/prebuilt': async (body: unknown) => (await entriesOf(body)) && { deploy: ready },
    });
    expect([r.code, JSON.parse(r.stdout), r.stderr]).toEqual([0, { deploy: ready }, '']);
  });

  it('a link in the directory stops before anything is sent, naming it; a missing directory too', async () => {
    const dir = await built((d) => symlink('/etc/passwd', path.join(d, 'assets', 'passwd')));
    const r = await cx(['deploy', '-p', 'shop', '--prebuilt', dir]);
    expect([r.code, r.calls]).toEqual([1, []]);
    expect(r.stderr).toMatch(/assets\/passwd is a symbolic link: a prebuilt upload holds files and directories only/);
    const missing = await cx(['deploy', '-p', 'shop', '--prebuilt', path.join(dir, 'nope')]);
    expect([missing.code, missing.calls, missing.stderr]).toEqual([1, [], expect.stringMatching(/is not a directory/)]);
  });

  it("the service's refusal is printed with its message, exit 1", async () => {
    const dir = await built();
    const r = await cx(['deploy', '-p', 'shop', '--prebuilt', dir], {
      'POST /projects/shop/deploys/prebuilt': async (body: unknown) => {
        await entriesOf(body);
        throw refusal(413, 'payload_too_large', 'the output holds more than 20 files and directories (ARTIFACT_MAX_FILES). Nothing was deployed');
      },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ARTIFACT_MAX_FILES\). Nothing was deployed/);
    expect(r.stderr).not.toMatch(/Uploaded/);
  });

  it('--preview without --prebuilt is a usage error', async () => {
    const r = await cx(['deploy', '-p', 'shop', '--preview']);
    expect([r.code, r.calls]).toEqual([2, []]);
  });
});

describe('cx deploy without a build source', () => {
  it('says how to set one (cx link, or --prebuilt) and exits 1; nothing is followed', async () => {
    const r = await cx(['deploy', '-p', 'shop'], {
      'POST /projects/shop/deploys': refusal(409, 'source_missing', 'the project has no build source'),
    });
    expect(r.code).toBe(1);
    expect(r.calls).toHaveLength(1);
    expect(r.stderr).toMatch(/no build source[\s\S]*cx link --repo <git url>[\s\S]*cx deploy --prebuilt \.\/dist/);
  });
});

describe('cx link', () => {
  const settings = (over: Partial<BuildSettings> = {}): BuildSettings => ({
    repoUrl: 'https://git.example/shop.git',
    defaultBranch: 'main',
    buildCommand: 'npm run build',
    outputDir: 'dist',
    spa: false,
    env: [],
    ...over,
  });

  it('sets the repository, branch, command and output through the settings route and prints them', async () => {
    const r = await cx(['link', '-p', 'shop', '--repo', 'https://git.example/shop.git', '--branch', 'main', '--command', 'npm run build', '--output', 'dist'], {
      'PATCH /projects/shop/deploys/settings': { settings: settings() },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.calls[0]!.body).toEqual({ repoUrl: 'https://git.example/shop.git', defaultBranch: 'main', buildCommand: 'npm run build', outputDir: 'dist' });
    expect(r.stderr).toBe('Linked shop\n');
    expect(r.stdout).toBe(
      'SETTING     VALUE\n' + 'repository  https://git.example/shop.git\n' + 'branch      main\n' + 'command     npm run build\n' + 'output      dist\n',
    );
  });

  it('changes only what is given (an empty command is kept as empty); without options it only reads; --json', async () => {
    const one = await cx(['link', '-p', 'shop', '--command', ''], { 'PATCH /projects/shop/deploys/settings': { settings: settings({ buildCommand: '' }) } });
    expect([one.code, one.calls[0]!.body]).toEqual([0, { buildCommand: '' }]);
    expect(one.stdout).toMatch(/command {5}\(none: the tree is the output\)/);
    const read = await cx(['link', '-p', 'shop', '--json'], { 'GET /projects/shop/deploys/settings': { settings: settings() } });
    expect([read.code, read.calls.map((c) => c.method), JSON.parse(read.stdout)]).toEqual([0, ['GET'], { settings: settings() }]);
    const none = await cx(['link', '-p', 'shop'], { 'GET /projects/shop/deploys/settings': { settings: settings({ repoUrl: null }) } });
    expect(none.stdout).toMatch(/shop has no build source: cx link --repo <url>, or cx deploy --prebuilt <dir>/);
  });

  it("the service's refusal of a repository is printed, exit 1", async () => {
    const r = await cx(['link', '-p', 'shop', '--repo', 'http://10.0.0.1/x.git'], {
      'PATCH /projects/shop/deploys/settings': refusal(400, 'url_private_host', 'repoUrl: the host is private'),
    });
    expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/the host is private/)]);
  });
});
