import { once } from 'node:events';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Queryable, RelationalStore } from '../../ports/relational-store.ts';
import { toQueryResult } from './pglite-store.ts';
import type { WorkerReply, WorkerRequest } from './pglite-worker-protocol.ts';

/**
 * PGlite on a thread of its own (pglite-worker.ts): the embedded default when the database lives in the data dir.
 *
 * PGlite runs Postgres compiled to WASM, and each statement runs synchronously on the thread that calls it. On the
 * main thread, that thread is also the edge's and the API's: at 10,000 error events/s, PGlite was half of it, and a
 * batch's statements held every request waiting behind them (issue 29). Here the main thread sends each statement as
 * a message and waits without blocking; rows come back by structured clone (Dates, numbers and parsed JSON as PGlite
 * returns them), and a failure comes back as an Error with Postgres's fields (`code`, `constraint`, ...).
 *
 * Same contract as pglite-store.ts (one connection: a transaction holds PGlite's lock until it ends, and a plain
 * query issued meanwhile waits for it). If the worker dies, every request in flight and after rejects.
 */
export async function createPgliteWorkerStore(dataDir: string): Promise<RelationalStore> {
  const worker = startWorker(dataDir);
  const pending = new Map<number, { resolve(r: Extract<WorkerReply, { ok: true }>): void; reject(err: Error): void }>();
  let nextId = 1;
  let dead: Error | undefined;

  const settle = () => (pending.size ? worker.ref() : worker.unref());
  const fail = (err: Error) => {
    dead ??= err;
    for (const p of pending.values()) p.reject(dead);
    pending.clear();
    settle();
  };
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, { resolve: () => resolve(), reject });
  });
  worker.on('message', (m: WorkerReply) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    settle();
    if (m.ok) p.resolve(m);
    else p.reject(Object.assign(new Error(m.error.message), m.error.fields, { name: m.error.name }));
  });
  worker.on('error', (err) => fail(err));
  worker.on('exit', (code) => fail(new Error(`PGlite's worker exited (code ${code})`)));
  await ready;

  const call = (req: WorkerRequest) =>
    new Promise<Extract<WorkerReply, { ok: true }>>((resolve, reject) => {
      if (dead) return reject(dead);
      pending.set(req.id, { resolve, reject });
      settle();
      worker.postMessage(req);
    });

  return {
    adapter: 'pglite',
    query: async <T>(sql: string, params?: unknown[]) => toQueryResult<T>(await call({ id: nextId++, op: 'query', sql, params })),
    async transaction(fn) {
      const tx = nextId++;
      await call({ id: tx, op: 'begin' });
      const inside: Queryable = {
        query: async <T>(sql: string, params?: unknown[]) => toQueryResult<T>(await call({ id: nextId++, op: 'query', sql, params, tx })),
      };
      let out: Awaited<ReturnType<typeof fn>>;
      try {
        out = await fn(inside);
      } catch (err) {
        await call({ id: nextId++, op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      await call({ id: nextId++, op: 'end', tx, commit: true });
      return out;
    },
    async snapshot(dest) {
      await call({ id: nextId++, op: 'snapshot', dest });
    },
    async close() {
      if (dead) return;
      const exited = once(worker, 'exit');
      await call({ id: nextId++, op: 'close' }).catch(() => undefined);
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000).unref())]);
      await worker.terminate();
    },
  };
}

/** The worker, on TypeScript source through tsx (as `npm start` runs), or on compiled JavaScript as it is. */
function startWorker(dataDir: string): Worker {
  const here = import.meta.url;
  const file = new URL(`./pglite-worker${here.endsWith('.ts') ? '.ts' : '.js'}`, here).href;
  const code = here.endsWith('.ts')
    ? `import(${JSON.stringify(tsxEsmApi(here))}).then(({ tsImport }) => tsImport(${JSON.stringify(file)}, ${JSON.stringify(here)}))`
    : `import(${JSON.stringify(file)})`;
  return new Worker(code, { eval: true, workerData: { dataDir } });
}

/** tsx's ESM API (its `import` export of `tsx/esm/api`), as a file URL the worker can import from anywhere. */
function tsxEsmApi(from: string): string {
  const require = createRequire(from);
  const manifest = require.resolve('tsx/package.json');
  const pkg = require(manifest) as { exports: Record<string, { import: { default: string } }> };
  return pathToFileURL(path.join(path.dirname(manifest), pkg.exports['./esm/api']!.import.default)).href;
}
