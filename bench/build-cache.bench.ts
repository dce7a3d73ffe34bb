/**
 * The build cache's speed-up (issue 42: "the second build of an app with real dependencies at least 3x faster than
 * the first"). Loopback only, no network: a stand-in npm registry on 127.0.0.1 (node:http, packuments and tarballs)
 * serves the dependency trees of real packages already in this repository's node_modules (vite, fastify, pino,
 * postcss, tinyglobby, zod and everything they depend on as installed here, native bindings included; tarballs made
 * with tar from the installed directories). Each package's dependency ranges are pinned to the version installed
 * here (this tree is not always what its ranges say, and npm must find every package it asks for in the stand-in),
 * optional dependencies and peers not installed here dropped. The app is a Vite app (its `build` script writes
 * dist/index.html after requiring each dependency; a package-lock.json made against the stand-in), built by runBuild
 * exactly as the builder runs it: sandboxed (bubblewrap), npm reaching the registry through the build's egress proxy
 * (loopback allowed, as in the tests), with the builder's build cache (builder/build-cache/). Two modes, each in
 * rounds of a cold build (the project's cache cleared first) then a warm one (the cache the cold one saved):
 *   detected  the command the builder detects (frameworks/): `npm ci && npm run build` cold, and warm, over the
 *             restored node_modules of the same package.json and lockfile, `npm install --prefer-offline ...`
 *   npmCi     `npm ci` set as the command: the warm build saves the downloads only (npm ci deletes node_modules)
 * Prints the medians and the ratios as JSON. The registry's HTTP server runs in this process: every host-side npm
 * runs as a child process awaited asynchronously (a synchronous one would block the server it asks).
 *
 *   npx tsx bench/build-cache.bench.ts [--rounds 2]
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BuildLog } from '../builder/build-log.ts';
import { runBuild, type BuildIsolation } from '../builder/build-run.ts';
import type { BuildCacheJob } from '../builder/build-cache/build-cache.ts';
import { buildCacheDir, clearBuildCache } from '../domain/deploys/build-cache-files.ts';
import { NPM_KEEP_INSTALL } from '../builder/frameworks/detect-framework.ts';
import { probeSandbox } from '../builder/sandbox/sandbox.ts';
import { createTestOutboundGuard } from '../platform/adapters/outbound/test-guard.ts';
import { numberArg } from './support/cli-args.ts';

const ROUNDS = numberArg('rounds', 2);
const ROOTS = ['vite', 'fastify', 'pino', 'postcss', 'tinyglobby', 'zod'];
const execFileAsync = promisify(execFile);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Pkg {
  name: string;
  version: string;
  dir: string;
  json: Record<string, any>;
}

/** The package a module in `dir` gets for `name`, as node resolves it (the version npm installed for its range). */
function resolveFrom(dir: string, name: string, root: string): Pkg | undefined {
  for (let d = dir; d.startsWith(root); d = path.dirname(d)) {
    const candidate = path.join(d, 'node_modules', name);
    const file = path.join(candidate, 'package.json');
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, 'utf8'));
      return { name: json.name, version: json.version, dir: candidate, json };
    }
    if (d === root) break;
  }
  return undefined;
}

/** The packages the roots need (dependencies, peers, the optional ones installed), each as installed here. */
function closure(root: string, roots: string[]): Pkg[] {
  const picked = new Map<string, Pkg>();
  const pending: Array<[string, string]> = roots.map((r) => [root, r]);
  while (pending.length) {
    const [from, name] = pending.pop()!;
    const p = resolveFrom(from, name, root);
    if (!p) continue;
    const key = `${p.name}@${p.version}`;
    if (picked.has(key)) continue;
    picked.set(key, p);
    const optionalPeers = p.json.peerDependenciesMeta ?? {};
    for (const dep of Object.keys({ ...(p.json.dependencies ?? {}), ...(p.json.optionalDependencies ?? {}) })) pending.push([p.dir, dep]);
    for (const dep of Object.keys(p.json.peerDependencies ?? {})) if (!optionalPeers[dep]?.optional) pending.push([p.dir, dep]);
  }
  return [...picked.values()];
}

const newest = (versions: string[]) =>
  versions.sort((a, b) => {
    const [x, y] = [a, b].map((v) => v.split(/[.-]/).map((n) => Number.parseInt(n, 10) || 0));
    for (let i = 0; i < 3; i++) if (x![i] !== y![i]) return y![i]! - x![i]!;
    return 0;
  })[0];

/**
 * The package's manifest as published by the stand-in: each dependency (and optional one, and peer) pinned to the
 * version installed for it here, those not installed here dropped.
 */
function pinned(p: Pkg, root: string, inClosure: Set<string>): Record<string, any> {
  const json = structuredClone(p.json);
  for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies']) {
    const deps = json[field] as Record<string, string> | undefined;
    if (!deps) continue;
    for (const dep of Object.keys(deps)) {
      const installed = resolveFrom(p.dir, dep, root);
      if (installed && inClosure.has(`${installed.name}@${installed.version}`)) deps[dep] = installed.version;
      else {
        delete deps[dep];
        if (json.peerDependenciesMeta) delete json.peerDependenciesMeta[dep];
      }
    }
  }
  delete json.devDependencies;
  return json;
}

/** The loopback registry: packuments at /<name>, tarballs at /-/t/<name>/<version>.tgz. */
async function startRegistry(pkgs: Pkg[], dir: string, root: string) {
  const tarballs = new Map<string, Buffer>();
  const byName = new Map<string, Pkg[]>();
  const inClosure = new Set(pkgs.map((p) => `${p.name}@${p.version}`));
  const staging = path.join(dir, 'staging');
  for (const p of pkgs) {
    const file = path.join(dir, `${p.name.replace('/', '+')}-${p.version}.tgz`);
    const stage = path.join(staging, `${p.name.replace('/', '+')}-${p.version}`);
    cpSync(p.dir, stage, { recursive: true, filter: (src) => path.relative(p.dir, src) !== 'node_modules' });
    p.json = pinned(p, root, inClosure);
    writeFileSync(path.join(stage, 'package.json'), JSON.stringify(p.json, null, 2));
    await execFileAsync('tar', ['-czf', file, '-C', stage, '--transform', 's,^\\.,package,', '.']);
    rmSync(stage, { recursive: true, force: true });
    tarballs.set(`${p.name}@${p.version}`, readFileSync(file));
    if (!byName.has(p.name)) byName.set(p.name, []);
    byName.get(p.name)!.push(p);
  }
  const server = createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    const tgz = /^\/-\/t\/(.+)\/([^/]+)\.tgz$/.exec(url);
    if (tgz) {
      const body = tarballs.get(`${tgz[1]}@${tgz[2]}`);
      if (!body) return res.writeHead(404).end();
      return res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
    }
    const name = url.slice(1);
    const versions = byName.get(name);
    if (!versions) return res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const packument = {
      name,
      'dist-tags': { latest: newest(versions.map((v) => v.version)) },
      versions: Object.fromEntries(
        versions.map((p) => {
          const body = tarballs.get(`${p.name}@${p.version}`)!;
          return [
            p.version,
            {
              ...p.json,
              dist: {
                tarball: `${base}/-/t/${p.name}/${p.version}.tgz`,
                shasum: createHash('sha1').update(body).digest('hex'),
                integrity: `sha512-${createHash('sha512').update(body).digest('base64')}`,
              },
            },
          ];
        }),
      ),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => new Promise((r) => server.close(r)) };
}

async function main() {
  const probe = await probeSandbox(65534);
  if (!probe.available) throw new Error(probe.message);
  const base = mkdtempSync(path.join(os.tmpdir(), 'bench-build-cache-'));
  chmodSync(base, 0o711);
  const pkgs = closure(process.cwd(), ROOTS);
  const registryDir = mkdtempSync(path.join(os.tmpdir(), 'bench-registry-'));
  const registry = await startRegistry(pkgs, registryDir, process.cwd());
  log(`registry ${registry.url}: ${pkgs.length} packages`);

  // The app: its package.json and the lockfile made against the stand-in registry, committed to a local repository.
  const repo = path.join(base, 'repo');
  mkdirSync(repo);
  const top = new Map(pkgs.map((p) => [p.name, p.version]));
  const dependencies = Object.fromEntries(ROOTS.map((r) => [r, top.get(r)!]));
  writeFileSync(
    path.join(repo, 'package.json'),
    JSON.stringify({ name: 'bench-app', version: '1.0.0', private: true, type: 'module', scripts: { build: 'node build.js' }, dependencies }, null, 2),
  );
  writeFileSync(
    path.join(repo, 'build.js'),
    `import fs from 'node:fs';\n${ROOTS.map((r) => `await import(${JSON.stringify(r)});`).join('\n')}\nfs.mkdirSync('dist', { recursive: true });\nfs.writeFileSync('dist/index.html', '<h1>built</h1>');\n`,
  );
  const npmEnv = { ...process.env, npm_config_registry: registry.url, npm_config_cache: path.join(base, 'host-npm-cache'), NO_PROXY: '*', no_proxy: '*' };
  await execFileAsync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: repo,
    env: npmEnv,
    timeout: 300_000,
  }).catch((err: { stderr?: string }) => {
    throw new Error(`the app's lockfile could not be made against the stand-in:\n${err.stderr ?? err}`);
  });
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=b@example.com', '-c', 'user.name=b', ...args], { cwd: repo });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'app');
  const installedCount = Object.keys(JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')).packages).length - 1;

  const iso: BuildIsolation = {
    sandbox: true,
    network: 'proxy',
    uid: 65534,
    memoryBytes: 2 * 1024 ** 3,
    pids: 512,
    cpuSeconds: 600,
    diskBytes: 8 * 1024 ** 3,
    tmpBytes: 512 * 1024 ** 2,
    allowUnlimited: true,
    artifact: { maxBytes: 1024 ** 3, maxFiles: 20_000, maxFileBytes: 256 * 1024 ** 2 },
    guard: createTestOutboundGuard(),
  };
  const dataDir = path.join(base, 'data');
  const cache: BuildCacheJob = {
    dir: buildCacheDir(dataDir),
    projectId: 'prj_bench',
    branch: 'main',
    defaultBranch: 'main',
    maxBytes: 1024 ** 3,
    totalBytes: 10 * 1024 ** 3,
    diskLow: async () => false,
    now: () => Date.now(),
  };
  // npm reaches the stand-in through the build's egress proxy, as it would a public registry.
  const env = { npm_config_registry: registry.url, NO_PROXY: 'none.invalid', no_proxy: 'none.invalid', npm_config_noproxy: 'none.invalid' };
  let n = 0;
  const build = async (command: string, expect: string) => {
    const lines: string[] = [];
    const buildLog: BuildLog = { write() {}, line: (_s: string, t: string) => void lines.push(t), async close() {}, stored: 0, held: 0 } as unknown as BuildLog;
    const id = `dep_bench_${n++}`;
    const t0 = performance.now();
    const out = await runBuild({
      deployId: id,
      branch: 'main',
      environment: 'production',
      repoUrl: repo,
      buildCommand: command,
      outputDir: command ? 'dist' : '.',
      env,
      workDir: path.join(base, 'builds', id),
      artifactDir: path.join(base, 'artifacts', id),
      timeoutMs: 600_000,
      log: buildLog,
      onSha: async () => undefined,
      isolation: iso,
      cache,
    });
    const ms = performance.now() - t0;
    if (!out.ok) throw new Error(`build failed (${out.reason}):\n${lines.slice(-30).join('\n')}`);
    const ran = lines.find((l) => l.startsWith('running: ')) ?? '';
    if (!ran.startsWith(`running: ${expect}`)) throw new Error(`expected ${expect}, the build ${ran}\n${lines.slice(-30).join('\n')}`);
    return { ms, cacheLine: lines.find((l) => l.startsWith('build cache restored') || l.startsWith('build cache dropped') || l === 'no build cache') ?? '' };
  };

  // [the command set (empty: detected), what the cold build runs, what the warm one runs]
  const modes = {
    detected: ['', 'npm ci && npm run build', `${NPM_KEEP_INSTALL} && npm run build`],
    npmCi: ['npm ci --no-audit --no-fund && npm run build', 'npm ci', 'npm ci'],
  } as const;
  const results: Record<string, { coldMs: number; warmMs: number; ratio: number; cacheMb: string; warmRuns: string }> = {};
  for (const [key, [command, coldRuns, warmRuns]] of Object.entries(modes)) {
    const cold: number[] = [];
    const warm: number[] = [];
    let cacheLine = '';
    for (let i = 0; i < ROUNDS; i++) {
      await clearBuildCache(cache.dir, cache.projectId);
      const c = await build(command, coldRuns);
      if (c.cacheLine !== 'no build cache') throw new Error(`the cold build had a cache: ${c.cacheLine}`);
      const w = await build(command, warmRuns);
      if (!w.cacheLine.startsWith('build cache restored')) throw new Error(`the warm build had no cache: ${w.cacheLine}`);
      cold.push(c.ms);
      warm.push(w.ms);
      cacheLine = w.cacheLine;
      log(`${key} round ${i + 1}: cold ${Math.round(c.ms)} ms, warm ${Math.round(w.ms)} ms`);
    }
    results[key] = {
      coldMs: Math.round(median(cold)),
      warmMs: Math.round(median(warm)),
      ratio: Math.round((median(cold) / median(warm)) * 100) / 100,
      cacheMb: /\(([\d.]+ MB)/.exec(cacheLine)?.[1] ?? '',
      warmRuns,
    };
  }
  await registry.close();
  rmSync(base, { recursive: true, force: true });
  rmSync(registryDir, { recursive: true, force: true });
  process.stdout.write(
    `${JSON.stringify(
      {
        machine: {
          nproc: os.cpus().length,
          cpu: os.cpus()[0]?.model,
          node: process.version,
          npm: execFileSync('npm', ['--version']).toString().trim(),
          sandbox: probe.version,
          loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
        },
        app: { roots: ROOTS, packages: installedCount },
        rounds: ROUNDS,
        ...results,
        target: { ratio: 3 },
      },
      null,
      2,
    )}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
