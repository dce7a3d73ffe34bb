/**
 * A flood of requests each naming a Host never seen before (`<random>.flood.example`), evenly paced at `rate` per
 * second for `durationSec`, over keep-alive connections to loopback (one request in flight on each; a request whose
 * time has come while all are busy waits, and is counted late, not dropped). Bounded: it stops scheduling after
 * `durationSec` and waits at most 5 s for what is in flight. For bench/host-flood.bench.ts.
 *
 * As a child process (so the flood does not share the server's event loop):
 *   node --import tsx bench/support/random-host-load.ts '{"port":..,"path":"/v1/","rate":1000,"durationSec":8,"connections":32}'
 * prints one JSON object (FloodResult) on stdout.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export interface FloodOptions {
  port: number;
  path: string;
  rate: number;
  durationSec: number;
  connections: number;
}

export interface FloodResult {
  scheduled: number;
  completed: number;
  achievedRps: number;
  statuses: Record<string, number>;
  errors: number;
  /** Distinct Hosts sent (every request its own). */
  distinctHosts: number;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export async function randomHostLoad(o: FloodOptions): Promise<FloodResult> {
  const total = Math.floor(o.rate * o.durationSec);
  const statuses: Record<string, number> = {};
  let completed = 0;
  let errors = 0;
  const request = () => Buffer.from(`GET ${o.path} HTTP/1.1\r\nHost: ${randomBytes(6).toString('hex')}.flood.example\r\n\r\n`);

  interface Conn {
    socket: net.Socket;
    buf: Buffer;
    busy: boolean;
  }
  const idle: Conn[] = [];
  let backlog = 0;
  const send = (c: Conn) => {
    c.busy = true;
    c.socket.write(request());
  };
  const conns = await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = net.connect({ host: '127.0.0.1', port: o.port, noDelay: true }, () => resolve(c));
          const c: Conn = { socket, buf: Buffer.alloc(0), busy: false };
          socket.once('error', reject);
          socket.on('data', (chunk: Buffer) => {
            c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
            for (;;) {
              const end = c.buf.indexOf(HEADER_END);
              if (end === -1) return;
              const headers = c.buf.subarray(0, end).toString('latin1');
              const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(headers)?.[1] ?? 0);
              if (c.buf.length < end + 4 + length) return;
              const status = headers.slice(9, 12);
              c.buf = c.buf.subarray(end + 4 + length);
              statuses[status] = (statuses[status] ?? 0) + 1;
              completed++;
              c.busy = false;
              if (backlog > 0) {
                backlog--;
                send(c);
              } else idle.push(c);
            }
          });
        }),
    ),
  );
  for (const c of conns) {
    c.socket.removeAllListeners('error');
    c.socket.on('error', () => {
      errors++;
      c.busy = false;
    });
    idle.push(c);
  }
  const t0 = performance.now();
  let scheduled = 0;
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - t0) * o.rate) / 1000));
      for (; scheduled < due; scheduled++) {
        const c = idle.pop();
        if (c) send(c);
        else backlog++;
      }
      if (scheduled >= total) {
        clearInterval(timer);
        done();
      }
    }, 1);
  });
  const until = performance.now() + 5_000;
  while ((completed + errors < scheduled || backlog > 0) && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
  const wallSec = (performance.now() - t0) / 1000;
  for (const c of conns) c.socket.destroy();
  return { scheduled, completed, achievedRps: Math.round(completed / wallSec), statuses, errors, distinctHosts: scheduled };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await randomHostLoad(JSON.parse(process.argv[2]!) as FloodOptions);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
