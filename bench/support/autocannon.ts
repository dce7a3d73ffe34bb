import { spawn } from 'node:child_process';
import path from 'node:path';

/** autocannon in a child process (so the load generator does not share the event loop of what it measures). */
export interface CannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  '2xx': number;
}

export function cannon(
  url: string,
  opts: { connections: number; durationSec: number; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
): Promise<CannonResult> {
  const a = ['--json', '-m', opts.method ?? 'GET', '-c', String(opts.connections), '-d', String(opts.durationSec)];
  for (const [k, v] of Object.entries(opts.headers ?? {})) a.push('-H', `${k}=${v}`);
  if (opts.body !== undefined) a.push('-b', opts.body);
  a.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn(path.resolve('node_modules/.bin/autocannon'), a, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`autocannon exited ${code}`))));
  });
}
