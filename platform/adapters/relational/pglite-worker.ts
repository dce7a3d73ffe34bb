import { existsSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { runStatement } from './pglite-store.ts';
import type { WorkerReply, WorkerRequest } from './pglite-worker-protocol.ts';

/**
 * The worker side of pglite-worker-store.ts: PGlite (Postgres in WASM, whose statements run synchronously on the
 * thread that calls them) on a thread of its own, answering the store's requests one message each. A transaction
 * is opened by `begin` and holds PGlite's lock until the main thread says `end`; requests outside it queue behind
 * it in PGlite, as they do when PGlite runs on the main thread.
 */
const port = parentPort!;
const { dataDir } = workerData as { dataDir: string };

/** Thrown inside PGlite's transaction to roll it back when the main thread's function failed. */
class Rollback extends Error {}

const errorFields = ['code', 'detail', 'hint', 'position', 'schema', 'table', 'column', 'dataType', 'constraint', 'severity', 'where', 'routine'] as const;
function serialiseError(err: unknown): Extract<WorkerReply, { ok: false }>['error'] {
  const e = err as Record<string, unknown> & { message?: string; name?: string };
  const fields: Record<string, unknown> = {};
  for (const k of errorFields) if (e?.[k] !== undefined) fields[k] = e[k];
  return { message: String(e?.message ?? err), name: String(e?.name ?? 'Error'), fields };
}

const reply = (m: WorkerReply) => port.postMessage(m);

/**
 * The embedded database's memory (issue 44, measured on this machine, PGlite 0.5 after 2,000 upserts): Postgres's
 * default shared_buffers of 128 MB is touched at start inside PGlite's WASM memory, 324 MB resident in all; at 16 MB
 * 196 MB. One service's control data (projects, issues, deliveries) is a few MB of hot pages, and what misses the
 * buffers is read from the OS's page cache. Initialising a new data directory (initdb) leaves its own WASM memory
 * behind until the instance is collected (~700 MB resident): on a new directory the database is opened once more,
 * so the first instance can be collected.
 */
const PGLITE_SHARED_BUFFERS = '16MB';
const options = { startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${PGLITE_SHARED_BUFFERS}`] };

async function open(dir: string): Promise<PGlite> {
  const fresh = !existsSync(path.join(dir, 'PG_VERSION'));
  const db = await PGlite.create(dir, options);
  if (!fresh) return db;
  await db.close();
  return PGlite.create(dir, options);
}

/** A statement's answer as it crosses to the main thread (rows by structured clone). */
const answer = (r: { rows: unknown[]; affectedRows?: number }) => ({ rows: r.rows, affectedRows: r.affectedRows ?? 0 });

async function main(): Promise<void> {
  let db: PGlite;
  try {
    db = await open(dataDir);
  } catch (err) {
    reply({ id: 0, ok: false, error: serialiseError(err) });
    return;
  }
  /** Requests of open transactions, waiting for their transaction's loop to take them. */
  const inbox = new Map<number, { queue: WorkerRequest[]; wake?: () => void }>();

  port.on('message', (m: WorkerRequest) => {
    if (m.tx !== undefined) {
      const box = inbox.get(m.tx);
      if (!box) return reply({ id: m.id, ok: false, error: { message: 'transaction is not open', name: 'Error', fields: {} } });
      box.queue.push(m);
      box.wake?.();
      return;
    }
    if (m.op === 'query') {
      runStatement(db, m.sql, m.params).then(
        (r) => reply({ id: m.id, ok: true, ...answer(r) }),
        (err) => reply({ id: m.id, ok: false, error: serialiseError(err) }),
      );
    } else if (m.op === 'begin') {
      const box: { queue: WorkerRequest[]; wake?: () => void } = { queue: [] };
      const next = async (): Promise<WorkerRequest> => {
        while (!box.queue.length) await new Promise<void>((r) => (box.wake = r));
        return box.queue.shift()!;
      };
      let endId: number | undefined;
      db.transaction(async (t) => {
        inbox.set(m.id, box);
        reply({ id: m.id, ok: true, rows: [], affectedRows: 0 });
        for (;;) {
          const q = await next();
          if (q.op === 'end') {
            endId = q.id;
            if (q.commit) return;
            throw new Rollback('rolled back');
          }
          if (q.op !== 'query') continue;
          try {
            reply({ id: q.id, ok: true, ...answer(await t.query(q.sql, q.params ?? [])) });
          } catch (err) {
            reply({ id: q.id, ok: false, error: serialiseError(err) });
          }
        }
      }).then(
        () => {
          inbox.delete(m.id);
          reply({ id: endId!, ok: true, rows: [], affectedRows: 0 });
        },
        (err) => {
          inbox.delete(m.id);
          // A rollback asked for is done; a failure of BEGIN (before `begin` was answered) or of COMMIT is the error.
          if (err instanceof Rollback) reply({ id: endId!, ok: true, rows: [], affectedRows: 0 });
          else reply({ id: endId ?? m.id, ok: false, error: serialiseError(err) });
        },
      );
    } else if (m.op === 'snapshot') {
      // Inside PGlite's transaction lock every other statement waits, so the files are still while they are copied;
      // the checkpoint first writes every committed change into them, so the copy opens as a cleanly stopped database.
      db.transaction(async (t) => {
        await t.exec('CHECKPOINT');
        await cp(dataDir, m.dest, { recursive: true, verbatimSymlinks: true });
      }).then(
        () => reply({ id: m.id, ok: true, rows: [], affectedRows: 0 }),
        (err) => reply({ id: m.id, ok: false, error: serialiseError(err) }),
      );
    } else if (m.op === 'close') {
      db.close().then(
        () => {
          reply({ id: m.id, ok: true, rows: [], affectedRows: 0 });
          port.close();
        },
        (err) => reply({ id: m.id, ok: false, error: serialiseError(err) }),
      );
    }
  });
  reply({ id: 0, ok: true, rows: [], affectedRows: 0 });
}

void main();
