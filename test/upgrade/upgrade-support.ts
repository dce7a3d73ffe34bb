import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { freePort } from '../e2e/support/console-service.ts';
import { eventually } from '../e2e/support/http-client.ts';
import { gitRepoWith } from '../support/git-repo.ts';

/**
 * What the upgrade fixture's maker (make-fixture.ts, against a tagged version's code) and the upgrade test (against
 * today's) share: the service as `npm start` runs it in a child process, plain HTTP to it, a webhook receiver.
 */
export const ROOT = path.resolve(import.meta.dirname, '../..');
export const FIXTURES = path.join(ROOT, 'test/upgrade/fixtures');

/** An answer read whole; `json` when the body is JSON. */
export interface Answer {
  status: number;
  /** Answers of whichever version answered, read field by field. */
  json: any;
  text: string;
}

/** One request with exactly these headers (a Host of our choosing included, which fetch will not set). */
export function call(base: string, method: string, url: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const sent = payload === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) };
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${url}`, { method, headers: sent }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, json, text });
      });
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer: ${method} ${url}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The answer, or a throw naming the call and what came back instead. */
export async function expectCall(base: string, status: number, method: string, url: string, headers: Record<string, string> = {}, body?: unknown) {
  const r = await call(base, method, url, headers, body);
  if (r.status !== status) throw new Error(`${method} ${url}: expected ${status}, got ${r.status} ${r.text.slice(0, 500)}`);
  return r.json;
}

/** The deploy once its build ended (ready, failed or canceled), read with `headers` (deploys:read). */
export function deployEnded(base: string, project: string, deployId: string, headers: Record<string, string>) {
  return eventually(
    `deploy ${deployId} ends`,
    async () => {
      const d = (await expectCall(base, 200, 'GET', `${project}/deploys/${deployId}`, headers)).deploy;
      return ['ready', 'failed', 'canceled'].includes(d.status) ? d : undefined;
    },
    120_000,
    250,
  );
}

/** A console session of the owner: the headers a same-origin browser sends. */
export async function signIn(base: string, owner: { email: string; password: string }): Promise<Record<string, string>> {
  const res = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(owner) });
  if (res.status !== 200) throw new Error(`sign-in as ${owner.email}: ${res.status} ${await res.text()}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { cookie, 'sec-fetch-site': 'same-origin' };
}

export interface ServiceProcess {
  base: string;
  child: ChildProcess;
  /** The pino lines the process wrote to stdout, parsed. */
  logs(): Array<Record<string, unknown>>;
  /** SIGTERM, and the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `tsx service/main.ts` in `cwd` (today's tree, or a tag's worktree) on a loopback port, once it answers. The stderr's
 * tail is in the error when it exits before answering.
 */
export async function startServiceProcess(cwd: string, env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'service/main.ts'], {
    cwd,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-8000)));
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await eventually(
    `the service in ${cwd} answers`,
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited (${child.exitCode ?? child.signalCode}): ${stderr}`);
      return (await fetch(`${base}/v1/openapi.json`).catch(() => undefined))?.status === 200 ? true : undefined;
    },
    120_000,
    200,
  ).catch((err) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    base,
    child,
    logs: () =>
      stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) process.stderr.write(`the service in ${cwd} exited with ${code}; its stderr: ${stderr}\n`);
      return code;
    },
  };
}

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on loopback: every delivery is answered 200 and kept, raw, for its signature. */
export async function webhookReceiver(): Promise<{ url: string; received: Delivery[]; close(): Promise<void> }> {
  const received: Delivery[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A git repository whose build (`sh build.sh`) writes out/index.html: `html`, shell variables expanded at build time. */
export async function siteRepo(dir: string, html: string): Promise<string> {
  return gitRepoWith({ 'build.sh': `mkdir -p out\necho "${html}" > out/index.html\n` }, dir);
}
