import { execFile as execFileCb, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { decodeErrorBatch } from '../../schemas/bus/error-events.ts';
import { createIngestProject, type IngestProject } from '../support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../support/test-edge.ts';
import { freePort, launchChromium } from './support/console-service.ts';

/**
 * The SDKs as a user gets them: each workspace package is packed (`npm pack`, which builds it), the tarballs are
 * installed offline into an empty project outside the repository, and the installed packages are used from plain
 * JavaScript (CommonJS `require` and ESM `import`, in their own Node processes) and from TypeScript (`tsc --noEmit`,
 * NodeNext, ESM and CommonJS files), against a started edge. The browser package is bundled from the installed copy
 * as a bundler would (errors alone, and everything: the errors-only bundle must leave analytics and flags out) and
 * runs in Chromium on a page of another origin with an ingest key.
 */
const execFile = promisify(execFileCb);
const root = path.resolve(import.meta.dirname, '../..');
let dir: string;
let edge: TestEdge;
let p: IngestProject;
let browser: Browser | undefined;

const published = (topic: string): Array<Record<string, unknown>> =>
  edge.bus.published
    .filter((m) => m.topic === topic)
    .flatMap((m) =>
      m.messages.map((x) =>
        topic === TOPICS.errorEvents
          ? decodeErrorBatch(x.value)!
          : (JSON.parse(x.value.toString()) as { projectId: string; events: Array<Record<string, unknown>> }),
      ),
    )
    .filter((b) => b.projectId === p.projectId)
    .flatMap((b) => b.events as unknown as Array<Record<string, unknown>>);

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cx-sdk-consumer-'));
  const tarballs = ['sdk/node', 'sdk/browser'].map(
    (ws) => execFileSync('npm', ['pack', '-w', ws, '--pack-destination', dir, '--silent'], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()!,
  );
  await writeFile(path.join(dir, 'package.json'), '{"name":"sdk-consumer","version":"1.0.0","private":true}');
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', ...tarballs.map((t) => path.join(dir, t))], {
    cwd: dir,
    encoding: 'utf8',
  });
  edge = await startTestEdge();
  p = await createIngestProject(edge.platform);
  const flag = { key: 'beta', description: '', enabled: true, rolloutPercentage: 100, variants: [], conditions: [], payload: { tier: 2 } };
  await edge.platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, 'beta', $3::jsonb)`, [
    newId('flg_'),
    p.projectId,
    JSON.stringify(flag),
  ]);
  await edge.settingsRefreshed();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await edge?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the SDK packages, packed and installed', () => {
  it('hold the build, types and README only, with no dependencies', async () => {
    for (const name of ['node', 'browser']) {
      const pkgDir = path.join(dir, 'node_modules', '@cx', name);
      const manifest = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8'));
      expect(manifest.dependencies ?? {}).toEqual({});
      expect(manifest.exports['.'].import.types).toBe('./dist/index.d.ts');
      const files = execFileSync('find', ['.', '-type', 'f'], { cwd: pkgDir, encoding: 'utf8' }).split('\n').filter(Boolean).sort();
      expect(files).toEqual(
        expect.arrayContaining(['./README.md', './package.json', './dist/index.js', './dist/index.cjs', './dist/index.d.ts', './dist/index.d.cts']),
      );
      expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.cts'))).toEqual([]);
    }
  });

  it('@cx/node from CommonJS and ESM: errors, analytics and flags reach the edge', async () => {
    const env = { ...process.env, SERVICE_INGEST_KEY: p.ingestKey, SERVICE_BASE_URL: edge.base };
    await writeFile(
      path.join(dir, 'app.cjs'),
      `const { init, verifyWebhook } = require('@cx/node');
const cx = init({ captureUncaught: false });
cx.captureException(new TypeError('from require'));
cx.capture('cjs_event', 'user-1', { via: 'require' });
cx.flags.isEnabled('beta', 'user-1').then(async (on) => {
  await cx.flush();
  await cx.close();
  console.log(JSON.stringify({ on, verify: typeof verifyWebhook }));
});`,
    );
    await writeFile(
      path.join(dir, 'app.mjs'),
      `import { init, createForwarder } from '@cx/node';
const cx = init({ captureUncaught: false });
cx.captureMessage('from import');
cx.capture('esm_event', 'user-2');
const variant = await cx.flags.getVariant('beta', 'user-2');
await cx.flush();
await cx.close();
console.log(JSON.stringify({ variant, forwarder: typeof createForwarder }));`,
    );
    const cjs = JSON.parse((await execFile(process.execPath, ['app.cjs'], { cwd: dir, env })).stdout);
    expect(cjs).toEqual({ on: true, verify: 'function' });
    const esm = JSON.parse((await execFile(process.execPath, ['app.mjs'], { cwd: dir, env })).stdout);
    expect(esm).toEqual({ variant: null, forwarder: 'function' });
    const errors = published(TOPICS.errorEvents);
    expect(errors.map((e) => e.message).sort()).toEqual(['from import', 'from require']);
    expect(
      published(TOPICS.analyticsEvents)
        .map((e) => e.event)
        .sort(),
    ).toEqual(['cjs_event', 'esm_event']);
  });

  it('type-check from TypeScript (NodeNext, an ESM and a CommonJS file), and wrong use is an error', async () => {
    await writeFile(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          strict: true,
          noEmit: true,
          lib: ['ES2022', 'DOM'],
          types: ['node'],
          typeRoots: [path.join(root, 'node_modules', '@types')],
        },
        include: ['*.mts', '*.cts'],
      }),
    );
    await writeFile(
      path.join(dir, 'server.mts'),
      `import { init, verifyWebhook, type NodeClient, type FlagAnswer } from '@cx/node';
import { init as initBrowser, initErrors, type CxClient } from '@cx/browser';
const cx: NodeClient = init({ ingestKey: 'cak_live_x', baseUrl: 'http://127.0.0.1:1', captureUncaught: false });
cx.captureException(new Error('x'), { extra: { orderId: 1 } });
const flags: Promise<Record<string, FlagAnswer>> = cx.flags.getFlags('u1', { keys: ['beta'] });
const payload = verifyWebhook<{ id: string }>('{}', 'v1=x', 'whsec_x');
const web: CxClient = initBrowser({ baseUrl: 'https://ingest.example.com/v1/', ingestKey: 'cak_live_x' });
web.flags.isEnabled('beta');
initErrors().captureMessage('m');
export { flags, payload };`,
    );
    await writeFile(
      path.join(dir, 'legacy.cts'),
      `import { init } from '@cx/node';
import { initErrors } from '@cx/browser';
init({ captureUncaught: false }).capture('e', 'u1', { n: 1 });
initErrors({ captureGlobal: false }).flush();`,
    );
    const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const ok = await execFile(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
      () => 'ok',
      (err: { stdout: string }) => err.stdout,
    );
    expect(ok).toBe('ok');
    // The types are real: a wrong call fails the check.
    await writeFile(path.join(dir, 'wrong.mts'), `import { init } from '@cx/node';\ninit({ captureUncaught: 'yes' });\n`);
    const wrong = await execFile(process.execPath, [tsc, '-p', dir], { cwd: dir }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    expect(wrong).toMatch(/wrong\.mts\(2,\d+\): error TS2322/);
    await rm(path.join(dir, 'wrong.mts'));
  });

  it('@cx/browser: requires without a window, tree-shakes to errors alone, and reports from a page with an ingest key', async () => {
    const required = JSON.parse(
      execFileSync(process.execPath, ['-e', "const b = require('@cx/browser'); console.log(JSON.stringify([typeof b.init, typeof b.initErrors]))"], {
        cwd: dir,
        encoding: 'utf8',
      }),
    );
    expect(required).toEqual(['function', 'function']);

    const bundle = async (source: string) => {
      await writeFile(path.join(dir, 'entry.mjs'), source);
      const out = await build({
        entryPoints: [path.join(dir, 'entry.mjs')],
        bundle: true,
        minify: true,
        format: 'iife',
        write: false,
        absWorkingDir: dir,
        logLevel: 'silent',
      });
      return Buffer.from(out.outputFiles[0]!.contents);
    };
    const errorsOnly = await bundle(
      `import { initErrors } from '@cx/browser';\nwindow.reporter = initErrors({ baseUrl: window.SERVICE + '/v1/', ingestKey: window.KEY });`,
    );
    const full = await bundle(`import { init } from '@cx/browser';\nwindow.cx = init({ baseUrl: window.SERVICE + '/v1/', ingestKey: window.KEY });`);
    const sizes = { errorsOnly: gzipSync(errorsOnly).length, full: gzipSync(full).length };
    console.log(`@cx/browser min+gzip bytes: ${JSON.stringify(sizes)}`);
    expect(errorsOnly.toString()).not.toContain('analytics/i');
    expect(errorsOnly.toString()).not.toContain('flags/i');
    expect(full.toString()).toContain('analytics/i');
    expect(sizes.errorsOnly).toBeLessThan(sizes.full);

    const port = await freePort();
    const server = http.createServer((req, res) => {
      if (req.url === '/reporter.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(errorsOnly);
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><script>window.SERVICE=${JSON.stringify(edge.base)};window.KEY=${JSON.stringify(p.ingestKey)}</script><script src="/reporter.js"></script>`,
        );
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      browser = await launchChromium();
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${port}/app`);
      await page.evaluate(async () => {
        const w = window as unknown as { reporter: { captureException(e: unknown): void; flush(): Promise<void> } };
        w.reporter.captureException(new RangeError('from the bundled package'));
        await w.reporter.flush();
      });
      const end = Date.now() + 10_000;
      while (!published(TOPICS.errorEvents).some((e) => e.message === 'from the bundled package') && Date.now() < end)
        await new Promise((r) => setTimeout(r, 100));
      const sent = published(TOPICS.errorEvents).find((e) => e.message === 'from the bundled package');
      expect(sent).toMatchObject({ name: 'RangeError', runtime: 'browser', path: '/app' });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
