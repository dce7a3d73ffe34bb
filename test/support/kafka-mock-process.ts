import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKafkaMock, type KafkaMockDataPath } from './kafka-mock.ts';

/**
 * The Kafka mock cluster (kcat plus its metadata-fixing proxy) in a process of its own, for
 * benchmarks: the proxy is JavaScript (relaying every byte with `dataPath: 'proxied'`, the bootstrap
 * metadata only with `'direct'`), and in the measured process it would be counted as the edge's cost.
 * Run as a script, it starts the mock and prints `BROKERS=<list> PID=<pid>`; `pid` is the process
 * running the proxy (tsx runs the script in a child of its own).
 */
export async function startKafkaMockProcess(opts: { dataPath?: KafkaMockDataPath } = {}): Promise<{ brokers: string; pid: number; stop(): Promise<void> }> {
  const here = fileURLToPath(import.meta.url);
  const tsx = path.resolve(path.dirname(here), '../../node_modules/.bin/tsx');
  const child = spawn(tsx, [here], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, KAFKA_MOCK_DATA_PATH: opts.dataPath ?? 'proxied' } });
  const { brokers, pid } = await new Promise<{ brokers: string; pid: number }>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('kafka mock process did not start in 30 s')), 30_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = /BROKERS=(\S+) PID=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ brokers: m[1]!, pid: Number(m[2]) });
      }
    });
    child.once('exit', (code) => reject(new Error(`kafka mock process exited (${code})`)));
  });
  return {
    brokers,
    pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const mock = await startKafkaMock({ dataPath: process.env.KAFKA_MOCK_DATA_PATH === 'direct' ? 'direct' : 'proxied' });
  process.stdout.write(`BROKERS=${mock.brokers} PID=${process.pid}\n`);
  const stop = async () => {
    await mock.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}
