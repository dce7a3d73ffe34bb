import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * ClickHouse's HTTP interface served from chDB in a process of its own (test/support/chdb-http-server.ts), so a bench's
 * load generator and roles do not share its event loop, and its CPU is counted apart.
 *
 *   node --import tsx bench/support/chdb-server-process.ts <dataDir>   prints {"ready":true,"url":...} when serving
 */
const SCRIPT = fileURLToPath(import.meta.url);

export async function spawnChdb(dataDir: string, nodeArgs: string[] = []): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', SCRIPT, dataDir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"ready":true'));
      if (line) resolve(JSON.parse(line).url);
    });
    child.once('exit', (code) => reject(new Error(`chdb server exited ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

if (process.argv[1] === SCRIPT && process.argv[2]) {
  const { startChdbHttpServer } = await import('../../test/support/chdb-http-server.ts');
  const server = await startChdbHttpServer({ dataDir: process.argv[2] });
  process.stdout.write(`${JSON.stringify({ ready: true, url: server.url })}\n`);
  process.on('SIGTERM', () => void server.stop().then(() => process.exit(0)));
}
