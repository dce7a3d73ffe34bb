import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { init, type NodeClient } from './index.ts';
import { LIMITS } from '../../schemas/limits.ts';

/** A stand-in for the edge: records every POST /v1/errors/i and answers what `answers` says, in turn. */
let server: Server;
let base: string;
const received: Array<{ auth: string | undefined; batch: Array<Record<string, unknown>>; status: number }> = [];
let answers: Array<{ status: number; headers?: Record<string, string> }> = [];
const clients: NodeClient[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const a = answers.shift() ?? { status: 202 };
      received.push({ auth: req.headers.authorization, batch: JSON.parse(body).batch, status: a.status });
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  received.length = 0;
  answers = [];
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const client = (over: Parameters<typeof init>[0] = {}) => {
  const c = init({ baseUrl: base, ingestKey: 'cak_live_test', captureUncaught: false, onError: () => undefined, ...over });
  clients.push(c);
  return c;
};
const accepted = () => received.filter((r) => r.status === 202).flatMap((r) => r.batch);

describe('Node SDK', () => {
  it('sends captured errors in one batch with the ingest key, runtime node, and the deploy from the environment', async () => {
    const c = client({ deployId: 'dep_1', gitSha: 'abc123' });
    c.captureException(new TypeError('x is undefined'), { extra: { orderId: 7 }, path: '/checkout' });
    c.captureMessage('cache miss storm');
    c.captureException('a string thrown');
    expect(await c.flush()).toBe(true);
    expect(received).toHaveLength(1);
    expect(received[0]!.auth).toBe('Bearer cak_live_test');
    expect(accepted()).toEqual([
      expect.objectContaining({
        name: 'TypeError',
        message: 'x is undefined',
        runtime: 'node',
        deployId: 'dep_1',
        gitSha: 'abc123',
        path: '/checkout',
        extra: { orderId: 7 },
        stack: expect.stringContaining('TypeError: x is undefined'),
      }),
      expect.objectContaining({ name: 'Message', message: 'cache miss storm' }),
      expect.objectContaining({ name: 'Error', message: 'a string thrown' }),
    ]);
  });

  it('splits by the edge limits (schemas/limits.ts): events and bytes per request', async () => {
    const c = client();
    for (let i = 0; i < 45; i++) c.captureMessage(`m${i}`);
    for (let i = 0; i < 3; i++) c.captureMessage('x'.repeat(30_000));
    await c.flush();
    expect(
      received.every(
        (r) => r.batch.length <= LIMITS.errorBatch.maxEvents && Buffer.byteLength(JSON.stringify({ batch: r.batch })) <= LIMITS.errorBatch.maxBodyBytes,
      ),
    ).toBe(true);
    expect(received.length).toBeGreaterThanOrEqual(Math.ceil(45 / LIMITS.errorBatch.maxEvents));
    expect(accepted()).toHaveLength(48);
  });

  it('503 then 202: waits for Retry-After and delivers once', async () => {
    answers = [{ status: 503, headers: { 'retry-after': '1' } }];
    const c = client();
    c.captureException(new Error('once'));
    expect(await c.flush(5_000)).toBe(true);
    expect(received.map((r) => r.status)).toEqual([503, 202]);
    expect(accepted().map((e) => e.message)).toEqual(['once']);
  });

  it('a timer tick while it waits out a Retry-After does not stall it: the event still goes once the wait is over', async () => {
    answers = [{ status: 503, headers: { 'retry-after': '1' } }];
    // The sender's own timer fires every 50 ms, many times inside the 1 s wait.
    const c = client({ flushIntervalMs: 50 });
    c.captureException(new Error('after the wait'));
    expect(await c.flush(5_000)).toBe(true);
    expect(accepted().map((e) => e.message)).toEqual(['after the wait']);
  });

  it('never throws into the application: an unreachable service keeps events queued, a full queue drops the oldest', async () => {
    const c = client({ baseUrl: 'http://127.0.0.1:1', maxQueue: 5 });
    expect(() => {
      for (let i = 0; i < 8; i++) c.captureException(new Error(`e${i}`));
      c.captureException(Object.assign(Object.create(null), { weird: true }));
    }).not.toThrow();
    expect(await c.flush(300)).toBe(false);
    expect(c.dropped).toBe(4);
  });

  it('sends the debug ids of the bundles in the stack, as `sentry-cli sourcemaps inject` put them in (issue 37)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cx-node-debug-ids-'));
    const g = globalThis as { _sentryDebugIds?: Record<string, string> };
    try {
      const bundle = path.join(dir, 'server.js');
      writeFileSync(bundle, "exports.charge = function charge(order) { throw new TypeError('card declined for ' + order); };\n");
      writeFileSync(path.join(dir, 'unused.js'), 'exports.unused = 1;\n');
      const cli = fileURLToPath(new URL('../../node_modules/.bin/sentry-cli', import.meta.url));
      execFileSync(cli, ['sourcemaps', 'inject', dir], { stdio: 'ignore' });
      const debugId = /\/\/# debugId=([0-9a-f-]{36})/.exec(readFileSync(bundle, 'utf8'))![1];
      const load = createRequire(import.meta.url);
      load(path.join(dir, 'unused.js'));
      const { charge } = load(bundle) as { charge(order: number): void };
      expect(Object.keys(g._sentryDebugIds ?? {})).toHaveLength(2);
      const c = client();
      try {
        charge(7);
      } catch (err) {
        c.captureException(err);
      }
      c.captureException(new Error('not from a bundle'));
      await c.flush();
      const [fromBundle, plain] = accepted();
      expect(fromBundle!.debugIds).toEqual({ [bundle]: debugId });
      expect(plain).not.toHaveProperty('debugIds');
    } finally {
      delete g._sentryDebugIds;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a process that dies of an uncaught exception still delivers it, and exits as Node would (code 1)', async () => {
    const sdk = fileURLToPath(new URL('./index.ts', import.meta.url));
    const script = `const { init } = await import(${JSON.stringify(sdk)}); init({ baseUrl: ${JSON.stringify(base)}, ingestKey: 'cak_live_child' }); setTimeout(() => { throw new Error('child crashed'); }, 10);`;
    const exit = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (err, _out, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
      );
      child.on('error', () => undefined);
    });
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('child crashed');
    expect(accepted()).toEqual([expect.objectContaining({ message: 'child crashed', runtime: 'node', extra: { mechanism: 'uncaught' } })]);
    expect(received[0]!.auth).toBe('Bearer cak_live_child');
  });
});
