/**
 * The data directory's owner answers on a Unix socket inside it, DATA_DIR/control.sock (mode 0600): the one way
 * another process (`npm run backup`) can have something done to the open engines, since the lock keeps it from
 * opening them itself. Only a user who can already open the socket file may ask, and what the answer gives (a path
 * to a copy inside the data directory) is readable only by who can read the data directory anyway.
 *
 * Protocol: one JSON object per line each way.
 *   {"op":"snapshot"} → {"ok":true,"dir":"<staged copy>","parts":[...],"service":{...}} or {"ok":false,"error":"..."};
 *                       the copy stays until the asker says {"op":"done"} or goes away (then it is removed).
 * One copy at a time. Anything else (not JSON, an unknown op, a line past 4 KB) is answered with an error and the
 * connection closed; the owner keeps serving whatever a client sends.
 */
import net from 'node:net';
import { chmod, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../logger.ts';
import { serviceBuild, type ServiceBuild } from './service-build.ts';

export const CONTROL_SOCKET = 'control.sock';
/** Linux's limit on a Unix socket's path (sun_path, 108 bytes with the final NUL). */
const MAX_SOCKET_PATH = 107;
const MAX_LINE = 4096;

export interface ControlSocket {
  /** The socket's path, or undefined when the data directory's path is too long for one. */
  readonly path: string | undefined;
  /** Stop answering; a copy being made is finished and removed first. */
  close(): Promise<void>;
}

/** A consistent copy of the data directory staged inside it (snapshot.ts). */
export interface StagedCopy {
  /** A data directory of its own. */
  dir: string;
  /** How each part was copied, in order. */
  parts: Array<{ name: string; how: string }>;
  remove(): Promise<void>;
}

const RequestSchema = z.object({ op: z.string() });
export const SnapshotReplySchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    dir: z.string(),
    parts: z.array(z.object({ name: z.string(), how: z.string() })),
    service: z.object({ version: z.string().optional(), commit: z.string().optional() }),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type SnapshotReply = z.infer<typeof SnapshotReplySchema>;

export function controlSocketPath(dataDir: string): string {
  return path.join(path.resolve(dataDir), CONTROL_SOCKET);
}

/** Listen on DATA_DIR/control.sock. The caller holds the data directory's lock: a socket file there is stale. */
export async function startControlSocket(dataDir: string, logger: Logger, snapshot: () => Promise<StagedCopy>): Promise<ControlSocket> {
  const file = controlSocketPath(dataDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    logger.warn({ file }, `the data directory's path is too long for a Unix socket (${MAX_SOCKET_PATH} bytes): npm run backup cannot reach this process`);
    return { path: undefined, close: async () => undefined };
  }
  await rm(file, { force: true });
  const conns = new Set<net.Socket>();
  /** The copy being made or held, and whose it is. */
  let current: { conn: net.Socket; made: Promise<StagedCopy | undefined> } | undefined;
  let build: Promise<ServiceBuild> | undefined;

  const release = async (conn: net.Socket) => {
    if (current?.conn !== conn) return;
    const { made } = current;
    const copy = await made;
    await copy?.remove().catch((err) => logger.warn({ err }, 'removing a backup copy failed'));
    if (current?.conn === conn) current = undefined;
  };

  async function answer(conn: net.Socket, line: string): Promise<void> {
    const send = (reply: object) => conn.writable && conn.write(`${JSON.stringify(reply)}\n`);
    const refuse = (error: string) => {
      send({ ok: false, error });
      conn.end();
    };
    let request: { op: string };
    try {
      request = RequestSchema.parse(JSON.parse(line));
    } catch {
      return refuse('a request is one JSON object per line, such as {"op":"snapshot"}');
    }
    if (request.op === 'done') {
      await release(conn);
      send({ ok: true });
      conn.end();
      return;
    }
    if (request.op !== 'snapshot') return refuse(`unknown request "${request.op.slice(0, 40)}": this process answers "snapshot" and "done"`);
    if (current) return refuse('a backup is already being made from this data directory; try again when it is done');
    const made = snapshot().then(
      (copy) => copy,
      (err: unknown) => {
        logger.error({ err }, 'a backup copy of the data directory failed');
        refuse(`the copy failed: ${(err as Error).message}`);
        return undefined;
      },
    );
    current = { conn, made };
    const copy = await made;
    if (!copy) {
      current = undefined;
      return;
    }
    // The asker went away while the copy was made: nobody will archive it.
    if (conn.destroyed) return release(conn);
    build ??= serviceBuild();
    send({ ok: true, dir: copy.dir, parts: copy.parts, service: await build } satisfies SnapshotReply);
    logger.info({ dir: copy.dir, parts: copy.parts.map((p) => p.name) }, 'backup copy of the data directory made');
  }

  const server = net.createServer((conn) => {
    conns.add(conn);
    conn.setEncoding('utf8');
    let buffered = '';
    let queue = Promise.resolve();
    conn.on('data', (chunk: string) => {
      buffered += chunk;
      if (!buffered.includes('\n') && buffered.length > MAX_LINE) {
        conn.end(`${JSON.stringify({ ok: false, error: `a request line is at most ${MAX_LINE} bytes` })}\n`);
        buffered = '';
        return;
      }
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        queue = queue.then(() => answer(conn, line)).catch((err) => logger.warn({ err }, 'control socket request failed'));
      }
    });
    conn.on('error', () => undefined);
    conn.on('close', () => {
      conns.delete(conn);
      void release(conn);
    });
  });
  server.on('error', (err) => logger.warn({ err }, 'control socket error'));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(file, () => {
      server.off('error', reject);
      resolve();
    });
  });
  await chmod(file, 0o600);
  // The service's work keeps the process alive, not this socket (a command holding the lock ends when it is done).
  server.unref();

  return {
    path: file,
    async close() {
      server.close();
      for (const conn of conns) conn.destroy();
      if (current) await release(current.conn);
      await rm(file, { force: true });
    },
  };
}

/** Raised by requestSnapshot when the owner does not answer on its socket. */
export class ControlSocketUnreachableError extends Error {
  override readonly name = 'ControlSocketUnreachableError';
}

/** The asker's side: a staged copy from the owner, held until `done()`. */
export async function requestSnapshot(dataDir: string): Promise<{ reply: Extract<SnapshotReply, { ok: true }>; done(): Promise<void> }> {
  const file = controlSocketPath(dataDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    throw new ControlSocketUnreachableError(`its path ${file} is longer than a Unix socket's path may be (${MAX_SOCKET_PATH} bytes)`);
  }
  const conn = net.createConnection(file);
  conn.setEncoding('utf8');
  const lines: string[] = [];
  let buffered = '';
  let wake: (() => void) | undefined;
  let ended: Error | undefined;
  conn.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      lines.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
    wake?.();
  });
  const gone = (err?: Error) => {
    ended ??= err ?? new Error('the service closed the connection');
    wake?.();
  };
  conn.on('error', gone);
  conn.on('close', () => gone());
  await new Promise<void>((resolve, reject) => {
    conn.once('connect', resolve);
    conn.once('error', (err: NodeJS.ErrnoException) =>
      reject(new ControlSocketUnreachableError(err.code === 'ENOENT' || err.code === 'ECONNREFUSED' ? `no one answers on ${file}` : err.message)),
    );
  });
  const nextLine = async (): Promise<string> => {
    while (!lines.length) {
      if (ended) throw ended;
      await new Promise<void>((r) => (wake = r));
    }
    return lines.shift()!;
  };
  conn.write(`${JSON.stringify({ op: 'snapshot' })}\n`);
  const reply = SnapshotReplySchema.parse(JSON.parse(await nextLine()));
  if (!reply.ok) {
    conn.destroy();
    throw new Error(reply.error);
  }
  return {
    reply,
    async done() {
      if (ended) return;
      conn.write(`${JSON.stringify({ op: 'done' })}\n`);
      await nextLine().catch(() => undefined);
      conn.destroy();
    },
  };
}
