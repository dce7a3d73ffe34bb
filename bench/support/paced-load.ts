/**
 * Open-loop, evenly paced HTTP/1.1 load, for latency at a fixed share of peak. autocannon's `-R` cannot
 * give that: each of its connections sends its per-second quota back to back at the start of every second
 * (lib/httpClient.js, `reqsMadeThisSecond`), so "70% of peak" is full-speed bursts for 0.7 s of each second
 * and its p99 is the peak's queueing. Here every request has a scheduled time (rate evenly over the run, at
 * the timer's 1 ms resolution) and its latency runs from that time, not from when a connection was free,
 * so a stall shows in every request it delays (wrk2's correction for coordinated omission).
 *
 * Keep-alive connections to loopback, one request in flight on each; a request whose time has come while
 * every connection is busy waits in order. Bounded: it stops scheduling after `durationSec` and waits at most
 * 5 s for what is in flight.
 *
 * As a child process (so the load does not share the server's event loop):
 *   node --import tsx bench/support/paced-load.ts '{"port":..,"path":..,"headers":{..},"bodyFile":..,"rate":..,"durationSec":..,"connections":..}'
 * prints one JSON object (PacedResult) on stdout.
 */
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface PacedOptions {
  host?: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  /** POST this file's bytes; without it a GET. */
  bodyFile?: string;
  /** Requests per second, spread evenly. */
  rate: number;
  durationSec: number;
  connections: number;
}

export interface PacedResult {
  scheduled: number;
  completed: number;
  achievedRps: number;
  statuses: Record<string, number>;
  errors: number;
  /** Latency from each request's scheduled time to its full response, ms. */
  latencyMs: { p50: number; p90: number; p99: number; p999: number; max: number };
}

const HEADER_END = Buffer.from('\r\n\r\n');

export async function pacedLoad(o: PacedOptions): Promise<PacedResult> {
  const host = o.host ?? '127.0.0.1';
  const body = o.bodyFile ? readFileSync(o.bodyFile) : Buffer.alloc(0);
  let head = o.bodyFile
    ? `POST ${o.path} HTTP/1.1\r\nHost: ${host}:${o.port}\r\nContent-Length: ${body.length}\r\n`
    : `GET ${o.path} HTTP/1.1\r\nHost: ${host}:${o.port}\r\n`;
  for (const [k, v] of Object.entries(o.headers)) head += `${k}: ${v}\r\n`;
  const request = Buffer.concat([Buffer.from(`${head}\r\n`), body]);

  const total = Math.floor(o.rate * o.durationSec);
  const latencies = new Float64Array(total);
  const statuses: Record<string, number> = {};
  let completed = 0;
  let errors = 0;

  interface Conn {
    socket: net.Socket;
    buf: Buffer;
    /** Scheduled time of the request in flight, or -1 when idle. */
    inFlightAt: number;
  }
  const idle: Conn[] = [];
  const backlog: number[] = [];

  const send = (c: Conn, scheduledAt: number) => {
    c.inFlightAt = scheduledAt;
    c.socket.write(request);
  };
  const onResponse = (c: Conn, status: number) => {
    latencies[completed++] = performance.now() - c.inFlightAt;
    statuses[status] = (statuses[status] ?? 0) + 1;
    c.inFlightAt = -1;
    const next = backlog.shift();
    if (next !== undefined) send(c, next);
    else idle.push(c);
  };

  const conns = await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = net.connect({ host, port: o.port, noDelay: true }, () => resolve(c));
          const c: Conn = { socket, buf: Buffer.alloc(0), inFlightAt: -1 };
          socket.once('error', reject);
          socket.on('data', (chunk: Buffer) => {
            c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
            for (;;) {
              const end = c.buf.indexOf(HEADER_END);
              if (end === -1) return;
              const headers = c.buf.subarray(0, end).toString('latin1');
              const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(headers)?.[1] ?? 0);
              const size = end + 4 + length;
              if (c.buf.length < size) return;
              const status = Number(headers.slice(9, 12));
              c.buf = c.buf.subarray(size);
              if (c.inFlightAt >= 0) onResponse(c, status);
            }
          });
        }),
    ),
  );
  for (const c of conns) {
    c.socket.removeAllListeners('error');
    c.socket.on('error', () => {
      errors++;
      c.inFlightAt = -1;
    });
    idle.push(c);
  }

  const t0 = performance.now();
  let scheduled = 0;
  await new Promise<void>((done) => {
    const timer = setInterval(() => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - t0) * o.rate) / 1000));
      for (; scheduled < due; scheduled++) {
        const at = t0 + (scheduled * 1000) / o.rate;
        const c = idle.pop();
        if (c) send(c, at);
        else backlog.push(at);
      }
      if (scheduled >= total) {
        clearInterval(timer);
        done();
      }
    }, 1);
  });
  const drainUntil = performance.now() + 5_000;
  while ((completed + errors < scheduled || backlog.length) && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 10));
  const wallSec = (performance.now() - t0) / 1000;
  for (const c of conns) c.socket.destroy();

  const sorted = latencies.subarray(0, completed).sort();
  const q = (p: number) => (sorted.length ? Number(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(2)) : NaN);
  return {
    scheduled,
    completed,
    achievedRps: Math.round(completed / wallSec),
    statuses,
    errors,
    latencyMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: sorted.length ? Number(sorted[sorted.length - 1]!.toFixed(2)) : NaN },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await pacedLoad(JSON.parse(process.argv[2]!) as PacedOptions);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
