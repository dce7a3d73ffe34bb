import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Role } from '../../../platform/config.ts';
import type { StartOptions } from '../../../service/service.ts';

/** A role started in a child process (role-process.ts); resolves once it printed that it is ready. */
export interface RoleProcess {
  child: ChildProcess;
  port?: number;
  /** SIGKILL: no shutdown, no commit, open transactions die with the connection. */
  kill(): Promise<void>;
  /** SIGTERM: graceful stop. */
  stop(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('./role-process.ts', import.meta.url));

/** `nodeArgs` go to node before the script (the bench passes `--cpu-prof`, which NODE_OPTIONS refuses). */
export async function spawnRole(
  role: Role,
  env: Record<string, string>,
  testing: StartOptions['testing'] = {},
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
): Promise<RoleProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', SCRIPT, role, JSON.stringify(testing ?? {})], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<{ port?: number }>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${role} did not start in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.startsWith('{"ready":true'));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${role} exited (${code}) before it was ready: ${stderr}`));
    });
  });
  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
  };
  return { child, port: ready.port, kill: () => signal('SIGKILL'), stop: () => signal('SIGTERM') };
}
