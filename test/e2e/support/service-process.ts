import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'vitest';
import { freePort } from './console-service.ts';
import { eventually } from './http-client.ts';

/**
 * The real command `npm start` runs (`node dist/service/main.js`, compiled by service/build.mjs), and the other commands of the repository, as child
 * processes: for the tests of the data directory (its lock, backups and restore). `killStarted()` in an afterAll
 * kills whatever is still running.
 */
export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const OWNER = { email: 'owner@lock.test', password: 'lock-owner-password' };

export interface Started {
  child: ChildProcess;
  base: string;
  exited: Promise<number | null>;
  stderr: () => string;
  stdout: () => string;
}

const children: ChildProcess[] = [];

export function killStarted(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/**
 * What `npm start` runs: service/start.sh, which compiles the service (service/build.mjs: test/global-setup.ts built it
 * once per test run, so here it finds nothing changed and writes nothing), sets glibc's malloc thresholds and replaces
 * itself with `node dist/service/main.js <args>` (the child's pid is the service's).
 */
export function runService(args: string[], env: Record<string, string>): Omit<Started, 'base'> {
  return spawnTracked('sh', [START_SCRIPT, ...args], env);
}

export const START_SCRIPT = 'service/start.sh';

/** `node --import tsx <args>` from the repository's root, with the environment given on top of this one. */
export function run(args: string[], env: Record<string, string>): Omit<Started, 'base'> {
  return spawnTracked(process.execPath, ['--import', 'tsx', ...args], env);
}

/** `npm run <script> -- <args>`, as an operator types it. */
export function npmRun(script: string, args: string[], env: Record<string, string>): Omit<Started, 'base'> {
  return spawnTracked('npm', ['run', '--silent', script, '--', ...args], env);
}

function spawnTracked(command: string, args: string[], env: Record<string, string>): Omit<Started, 'base'> {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  let out = '';
  child.stderr!.on('data', (c: Buffer) => {
    err = (err + c.toString()).slice(-8000);
  });
  child.stdout!.on('data', (c: Buffer) => {
    out = (out + c.toString()).slice(-8000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => err, stdout: () => out };
}

/** `npm start`'s process on `dataDir`, resolved once it answers; the owner is OWNER. */
export async function startService(dataDir: string, env: Record<string, string> = {}): Promise<Started> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const s = runService([], {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    SETTINGS_REFRESH_MS: '250',
    ALLOW_LOCAL_REPOS: 'true',
    ...env,
  });
  let gone = false;
  void s.exited.then(() => (gone = true));
  await eventually(
    'the service answers',
    async () => {
      if (gone) throw new Error(`the service exited: ${s.stderr()}`);
      return (await fetch(`${base}/v1/openapi.json`).catch(() => undefined))?.status === 200 ? true : undefined;
    },
    120_000,
    200,
  );
  return { ...s, base };
}

/** A console session of OWNER: the headers a same-origin browser sends. */
export async function signIn(base: string): Promise<Record<string, string>> {
  const res = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  expect(res.status).toBe(200);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
}

export async function json(base: string, route: string, headers: Record<string, string>, init: { method?: string; body?: unknown } = {}) {
  const res = await fetch(`${base}${route}`, { method: init.method ?? 'GET', headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  return { status: res.status, body: (await res.json()) as any };
}
