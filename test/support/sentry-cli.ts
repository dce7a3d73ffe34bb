import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * The real `@sentry/cli` (node_modules/.bin/sentry-cli, the npm package's Rust binary) run as its users run it, and a
 * bundled app for it to inject and upload: esbuild, minified, content-hashed names, external source maps.
 */
const BIN = path.resolve(import.meta.dirname, '../../node_modules/.bin/sentry-cli');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run sentry-cli in `cwd` with nothing of this machine's Sentry settings (no ~/.sentryclirc, no SENTRY_* variables). */
export function sentryCli(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<CliRun> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: opts.cwd,
    SENTRY_DISABLE_UPDATE_CHECK: 'true',
    SENTRY_HTTP_MAX_RETRIES: '0',
    ...opts.env,
  };
  return new Promise((resolve) => {
    execFile(BIN, args, { cwd: opts.cwd, env, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code as number) : -1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** `sentry-cli --url <base> --auth-token <token> sourcemaps upload --org <org> --project <p> <dir>`. */
export function sentryUpload(base: string, token: string, project: string | string[], dir: string, opts: { org?: string; extra?: string[] } = {}) {
  const projects = [project].flat().flatMap((p) => ['--project', p]);
  return sentryCli(
    ['--url', `${base}/`, '--auth-token', token, 'sourcemaps', 'upload', '--org', opts.org ?? 'any-org', ...projects, ...(opts.extra ?? []), dir],
    {
      cwd: path.dirname(dir),
    },
  );
}

export interface BuiltApp {
  /** The folder holding `dist/`. */
  root: string;
  /** `root/dist`: `assets/main-<hash>.js` and its `.map`. */
  dist: string;
}

/**
 * A small app bundled by esbuild into `dist/assets/main-<hash>.js` with an external map. `variant` changes the code,
 * so its hash (and its map's debug id) differ; `padBytes` makes the map that much larger.
 */
export async function buildApp(variant = 'a', opts: { padBytes?: number } = {}): Promise<BuiltApp> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'sentry-cli-app-'));
  await mkdir(path.join(root, 'src'));
  // A comment the minifier drops but the map's sourcesContent keeps: a large map from a small bundle.
  const pad = opts.padBytes ? `/* ${randomBytes(Math.ceil((opts.padBytes * 3) / 4)).toString('base64')} */\n` : '';
  await writeFile(
    path.join(root, 'src/lib.js'),
    `${pad}export function chargeCard(amount) {\n  if (amount > 0) throw new Error('payment failed ${variant}');\n  return amount;\n}\n`,
  );
  await writeFile(path.join(root, 'src/main.js'), `import { chargeCard } from './lib.js';\nglobalThis.checkout = () => chargeCard(42);\n`);
  const dist = path.join(root, 'dist');
  await build({
    entryPoints: [path.join(root, 'src/main.js')],
    bundle: true,
    minify: true,
    sourcemap: true,
    format: 'iife',
    entryNames: '[name]-[hash]',
    outdir: path.join(dist, 'assets'),
    logLevel: 'silent',
  });
  return { root, dist };
}

/** The built JS file (`assets/main-<hash>.js`) and its debug id once `sourcemaps inject` wrote one. */
export async function builtFile(dist: string): Promise<{ servedPath: string; debugId: string | undefined }> {
  const name = (await readdir(path.join(dist, 'assets'))).find((n) => n.endsWith('.js'))!;
  const text = await readFile(path.join(dist, 'assets', name), 'utf8');
  return { servedPath: `/assets/${name}`, debugId: /\/\/# debugId=([0-9a-f-]{36})/.exec(text)?.[1] };
}
