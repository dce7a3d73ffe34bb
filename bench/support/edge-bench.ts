import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createPlatform, type Platform } from '../../platform/platform.ts';
import type { Bus } from '../../platform/ports/bus.ts';
import { createPgliteStore } from '../../platform/adapters/relational/pglite-store.ts';
import { createPgStore } from '../../platform/adapters/relational/pg-store.ts';
import type { RelationalStore } from '../../platform/ports/relational-store.ts';
import { allowAllLimiter } from '../../test/support/ingest-fixtures.ts';
import type { PacedResult } from './paced-load.ts';

/**
 * What the edge benches share: load generators in child processes (autocannon, and the evenly paced open-loop load
 * of paced-load.ts), optional CPU pinning (`--pin`: this process on CPU 0, load and brokers on CPU 1), the machine's
 * description, and an edge platform whose limiter always allows and whose settings come from Postgres.
 */
export const EDGE_CPU = '0';
export const OTHERS_CPU = '1';
let pinned = false;

/** `--pin`: this process on EDGE_CPU from now on, and every child started here on OTHERS_CPU. */
export function pinThisProcess(): void {
  pinned = true;
  pin(process.pid, EDGE_CPU);
}
export const isPinned = () => pinned;

export function pin(pid: number, cpu: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpu, String(pid)], { stdio: 'ignore' });
}

export const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

export interface CannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  '2xx': number;
}

/** autocannon in a child process: POST `bodyFile`, or GET without one. */
export async function cannon(
  url: string,
  bodyFile: string | undefined,
  headers: Record<string, string>,
  opts: { duration: number; rate?: number; connections: number },
): Promise<CannonResult> {
  const bin = path.resolve('node_modules/.bin/autocannon');
  const a = ['--json', '-c', String(opts.connections), '-d', String(opts.duration)];
  if (bodyFile) a.push('-m', 'POST', '-i', bodyFile);
  for (const [k, v] of Object.entries(headers)) a.push('-H', `${k}=${v}`);
  if (opts.rate) a.push('-R', String(Math.max(1, Math.round(opts.rate))));
  a.push(url);
  return jsonFromChild(bin, a, 'ignore', 'autocannon');
}

/** autocannon in a child process, POSTing `bodyFile`'s bytes as they are (gzip and other binary bodies). */
export function cannonBinary(
  url: string,
  bodyFile: string,
  headers: Record<string, string>,
  opts: { duration: number; connections: number },
): Promise<CannonResult> {
  const script = path.resolve('bench/support/cannon-binary.mjs');
  return jsonFromChild(process.execPath, [script, JSON.stringify({ url, bodyFile, headers, ...opts })], 'ignore', 'autocannon');
}

/** Run a child that prints one JSON document on stdout, and parse it. */
export function jsonFromChild<T>(command: string, args: string[], stderr: 'ignore' | 'inherit', what: string): Promise<T> {
  if (pinned) [command, args] = ['taskset', ['-c', OTHERS_CPU, command, ...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', stderr] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('exit', (code) => {
      try {
        resolve(JSON.parse(out));
      } catch {
        reject(new Error(`${what} exited ${code}: ${out.slice(0, 300)}`));
      }
    });
  });
}

/** Evenly paced open-loop load in a child process (paced-load.ts): POST `bodyFile`, or GET without one. */
export function paced(
  port: number,
  urlPath: string,
  bodyFile: string | undefined,
  headers: Record<string, string>,
  opts: { duration: number; rate: number; connections: number },
): Promise<PacedResult> {
  const script = path.resolve('bench/support/paced-load.ts');
  const args = JSON.stringify({ port, path: urlPath, headers, bodyFile, rate: opts.rate, durationSec: opts.duration, connections: opts.connections });
  return jsonFromChild(process.execPath, ['--import', 'tsx', script, args], 'inherit', 'paced load');
}

export function cpuModel(): string {
  const m = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'));
  return m ? m[1]! : (os.cpus()[0]?.model ?? 'unknown');
}

export function machine() {
  return {
    nproc: os.cpus().length,
    cpu: cpuModel(),
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

/**
 * The edge's settings cache reads Postgres, as in production (a local server, loopback); PGlite only when none
 * answers. PGlite runs inside the edge's own thread, so its refreshes would be counted as edge cost that production
 * does not have.
 */
const BENCH_DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export let settingsStore: 'postgres' | 'pglite' = 'pglite';

async function benchDb(): Promise<RelationalStore> {
  try {
    const store = await createPgStore(BENCH_DATABASE_URL);
    await store.query('SELECT 1');
    settingsStore = 'postgres';
    return store;
  } catch {
    settingsStore = 'pglite';
    return createPgliteStore();
  }
}

/** A platform for an edge under load: `bus`, a limiter that always allows, no analytical store or mail. */
export async function edgePlatform(bus: Bus): Promise<Platform> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-edge-'));
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' });
  const noop = async () => undefined;
  return createPlatform(config, createLogger('silent'), {
    db: await benchDb(),
    bus,
    limiter: allowAllLimiter,
    analytics: { adapter: 'chdb', command: noop, query: async () => [], insert: noop, close: noop },
    mailer: { adapter: 'file', send: noop, close: noop },
  });
}
