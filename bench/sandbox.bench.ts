/**
 * The build sandbox's overhead (issue 22): a trivial build (checkout of a one-commit local repository, a build
 * command that writes one file, the artifact copy) run by runBuild exactly as the builder runs it, sandboxed with
 * bubblewrap (with socat as the relay to the egress proxy, and with the node relay machines without socat use) and
 * with BUILD_SANDBOX=off, alternating, in one run. Prints the medians and the overhead as JSON.
 *
 *   npx tsx bench/sandbox.bench.ts [--builds 20]
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BuildLog } from '../builder/build-log.ts';
import { runBuild, type BuildIsolation } from '../builder/build-run.ts';
import { probeSandbox } from '../builder/sandbox/sandbox.ts';
import { numberArg } from './support/cli-args.ts';
import { createPublicInternetGuard } from '../platform/adapters/outbound/public-internet-guard.ts';

const BUILDS = numberArg('builds', 20);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
const quietLog: BuildLog = { write() {}, line() {}, async close() {}, stored: 0, held: 0 };

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  const probe = await probeSandbox(65534);
  if (!probe.available) throw new Error(probe.message);
  const repo = mkdtempSync(path.join(os.tmpdir(), 'bench-sandbox-repo-'));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=b@example.com', '-c', 'user.name=b', ...args], { cwd: repo });
  git('init', '-q', '-b', 'main');
  writeFileSync(path.join(repo, 'build.sh'), 'mkdir -p out && echo "<h1>hi</h1>" > out/index.html\n');
  git('add', '.');
  git('commit', '-q', '-m', 'one');
  const base = mkdtempSync(path.join(os.tmpdir(), 'bench-sandbox-'));
  chmodSync(base, 0o711);
  const iso = (sandbox: boolean, relay: 'auto' | 'node' = 'auto'): BuildIsolation => ({
    sandbox,
    relay,
    network: 'proxy',
    uid: 65534,
    memoryBytes: 2 * 1024 ** 3,
    pids: 512,
    cpuSeconds: 600,
    diskBytes: 8 * 1024 ** 3,
    tmpBytes: 512 * 1024 ** 2,
    artifact: { maxBytes: 1024 ** 3, maxFiles: 20_000, maxFileBytes: 256 * 1024 ** 2 },
    guard: createPublicInternetGuard(),
  });
  const times: Record<'sandboxed' | 'nodeRelay' | 'plain', number[]> = { sandboxed: [], nodeRelay: [], plain: [] };
  for (let i = 0; i < BUILDS + 2; i++) {
    for (const kind of ['sandboxed', 'nodeRelay', 'plain'] as const) {
      const id = `dep_bench_${kind}_${i}`;
      const t0 = performance.now();
      const out = await runBuild({
        deployId: id,
        branch: 'main',
        environment: 'production',
        repoUrl: repo,
        buildCommand: 'sh build.sh',
        outputDir: 'out',
        env: {},
        workDir: path.join(base, id),
        artifactDir: path.join(base, 'artifacts', id),
        timeoutMs: 60_000,
        log: quietLog,
        onSha: async () => undefined,
        isolation: iso(kind !== 'plain', kind === 'nodeRelay' ? 'node' : 'auto'),
      });
      const ms = performance.now() - t0;
      if (!out.ok) throw new Error(`${kind} build failed: ${out.reason}`);
      if (i >= 2) times[kind].push(ms); // two warm-up rounds
    }
  }
  log(`ran ${BUILDS} builds of each kind`);
  const sandboxed = median(times.sandboxed);
  const plain = median(times.plain);
  const nodeRelay = median(times.nodeRelay);
  process.stdout.write(
    `${JSON.stringify(
      {
        machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version, sandbox: probe.version },
        builds: BUILDS,
        medianMs: { sandboxed: Math.round(sandboxed), sandboxedNodeRelay: Math.round(nodeRelay), plain: Math.round(plain) },
        overheadMs: { socatRelay: Math.round(sandboxed - plain), nodeRelay: Math.round(nodeRelay - plain) },
        target: { overheadMs: 150 },
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
