/**
 * From `npm start` to the first answer of `GET /v1/` (issue 23): the whole service in one process on the embedded
 * defaults, as a newcomer starts it. Cold: a fresh data dir (migrations, the first start's account and demo
 * project). Warm: the same data dir again. Median of --runs warm starts; prints JSON.
 *
 *   npx tsx bench/start.bench.ts [--runs 3]
 */
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { numberArg } from './support/cli-args.ts';

const RUNS = numberArg('runs', 3);

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

async function startOnce(dataDir: string): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'service/main.ts'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      if (performance.now() - t0 > 120_000) throw new Error('the service did not answer within 120 s');
      const ok = await fetch(`http://127.0.0.1:${port}/v1/`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-start-'));
  const cold = await startOnce(dataDir);
  const warm: number[] = [];
  for (let i = 0; i < RUNS; i++) warm.push(await startOnce(dataDir));
  warm.sort((a, b) => a - b);
  process.stdout.write(
    `${JSON.stringify(
      {
        machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
        coldMs: Math.round(cold),
        warmMs: { median: Math.round(warm[Math.floor(warm.length / 2)]!), all: warm.map(Math.round) },
        target: { warmMs: 5000 },
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
