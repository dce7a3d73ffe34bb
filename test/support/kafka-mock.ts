import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { openSync, closeSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * librdkafka's mock cluster, carried by Debian's `kcat`: the real Kafka protocol, in memory, with
 * topics that auto-create and a bounded log per partition (~5 MB; keep a test's unconsumed backlog
 * below that).
 *
 * kcat runs as a consumer of a `keepalive` topic so the process (and with it the cluster) stays up
 * until stop(). Without `-d mock` librdkafka still prints the cluster's addresses as a level-5
 * notice ("replaced with host:port,..."); debug logging would log every request and grow the log
 * without bound under load, so it is off. Both line shapes are parsed.
 *
 * The mock (librdkafka 2.0) answers Metadata with controller id 0, a broker that does not exist.
 * kafkajs asks "the controller" for an idempotent producer's id (and for admin calls), so against
 * the bare mock `idempotent: true` cannot connect. Real clusters (ZooKeeper or KRaft) always name
 * a live broker. So each mock broker is fronted by a small proxy that passes every byte through
 * except: Metadata's controller id becomes a live broker, and broker addresses in Metadata and
 * FindCoordinator answers point at the proxies (so clients keep talking through them).
 *
 * `dataPath: 'direct'` (the benches) leaves the brokers' own addresses in those answers, so only bootstrap
 * goes through a proxy and clients then talk to the brokers as to a real cluster. kafkajs asks the
 * controller for an idempotent producer's id at connect, from the bootstrap metadata, which is fixed;
 * metadata fetched later from a broker names the dead controller again, which matters only if a producer
 * must re-initialise (not in a bench run). Tests keep the default, `proxied`.
 */
/** Whether clients' data goes through the metadata-fixing proxies (`proxied`) or only bootstrap does (`direct`). */
export type KafkaMockDataPath = 'proxied' | 'direct';

export async function startKafkaMock(opts: { brokers?: number; dataPath?: KafkaMockDataPath } = {}): Promise<{ brokers: string; stop(): Promise<void> }> {
  const count = opts.brokers ?? 3;
  if (spawnSync('kcat', ['-V'], { stdio: 'ignore' }).error) {
    throw new Error('kcat not found: install the Debian package "kcat" (apt-get install -y kcat) to run the Kafka mock cluster');
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), 'kafka-mock-'));
  const logPath = path.join(dir, 'kcat.log');
  const fd = openSync(logPath, 'w');
  const child = spawn('kcat', ['-X', `test.mock.num.brokers=${count}`, '-C', '-t', 'keepalive', '-b', 'localhost:1', '-q'], {
    stdio: ['ignore', 'ignore', fd],
  });
  closeSync(fd);

  let exited: string | undefined;
  child.on('exit', (code, signal) => {
    exited = `kcat exited (code ${code}, signal ${signal})`;
  });
  let proxy: { close(): Promise<void> } | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (exited === undefined) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }
    await proxy?.close();
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  for (;;) {
    const log = await readFile(logPath, 'utf8').catch(() => '');
    const m = /bootstrap\.servers=(\S+)/.exec(log) ?? /replaced with (\S+)/.exec(log);
    if (m) {
      try {
        const fronted = await startProxies(m[1].split(','), opts.dataPath ?? 'proxied');
        proxy = fronted;
        return { brokers: fronted.brokers.join(','), stop };
      } catch (err) {
        await stop();
        throw err;
      }
    }
    if (exited !== undefined || Date.now() > deadline) {
      await stop();
      throw new Error(`kafka mock cluster did not start: ${exited ?? 'no bootstrap.servers in 10 s'}; kcat said: ${log.slice(0, 500)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const API_METADATA = 3;
const API_FIND_COORDINATOR = 10;
/** Flexible (tagged-field) versions use other encodings; kafkajs stays below them. */
const MAX_REWRITTEN_VERSION = { [API_METADATA]: 8, [API_FIND_COORDINATOR]: 2 } as Record<number, number>;

async function startProxies(upstreams: string[], dataPath: KafkaMockDataPath): Promise<{ brokers: string[]; close(): Promise<void> }> {
  const servers: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  /** upstream port → proxy port */
  const portMap = new Map<number, number>();

  for (const upstream of upstreams) {
    const [host, portText] = splitHostPort(upstream);
    const server = net.createServer({ noDelay: true }, (client) => {
      // No Nagle on either leg: a relayed frame goes out as it arrives, as a direct connection would.
      const broker = net.connect({ port: Number(portText), host, noDelay: true });
      sockets.add(client);
      sockets.add(broker);
      const asked = new Map<number, { apiKey: number; version: number }>();
      const end = () => {
        client.destroy();
        broker.destroy();
        sockets.delete(client);
        sockets.delete(broker);
      };
      client.on('error', end).on('close', end);
      broker.on('error', end).on('close', end);
      // Requests: the head (size, api key, version, correlation id) is read; every byte goes on at once.
      client.on(
        'data',
        relay(
          REQUEST_HEAD_BYTES,
          (head) => {
            const apiKey = head.readInt16BE(4);
            const version = head.readInt16BE(6);
            if (apiKey in MAX_REWRITTEN_VERSION && version <= MAX_REWRITTEN_VERSION[apiKey]) asked.set(head.readInt32BE(8), { apiKey, version });
            return 'pass';
          },
          (bytes) => broker.write(bytes),
        ),
      );
      // Responses: only those to a Metadata or FindCoordinator request are held whole and rewritten.
      broker.on(
        'data',
        relay(
          RESPONSE_HEAD_BYTES,
          (head) => (asked.has(head.readInt32BE(4)) ? 'hold' : 'pass'),
          (bytes) => client.write(bytes),
          (frame) => {
            const req = asked.get(frame.readInt32BE(4))!;
            asked.delete(frame.readInt32BE(4));
            try {
              if (req.apiKey === API_METADATA) rewriteMetadata(frame, req.version, portMap);
              else rewriteFindCoordinator(frame, req.version, portMap);
            } catch {
              // A frame shaped other than expected passes through unchanged.
            }
            client.write(frame);
          },
        ),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    servers.push(server);
    if (dataPath === 'proxied') portMap.set(Number(portText), (server.address() as net.AddressInfo).port);
  }

  return {
    brokers: servers.map((s) => `127.0.0.1:${(s.address() as net.AddressInfo).port}`),
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

function splitHostPort(hp: string): [string, string] {
  const i = hp.lastIndexOf(':');
  return [hp.slice(0, i), hp.slice(i + 1)];
}

/** Request head: size(4) api_key(2) api_version(2) correlation_id(4). */
const REQUEST_HEAD_BYTES = 12;
/** Response head: size(4) correlation_id(4). */
const RESPONSE_HEAD_BYTES = 8;

/**
 * Relays a stream of size-prefixed Kafka frames. Each frame's first `headBytes` are read and shown to
 * `decide`: a frame to `pass` goes on as it arrives (large produce requests are never buffered or
 * copied), a frame to `hold` is gathered whole and handed to `onHeld`.
 */
function relay(
  headBytes: number,
  decide: (head: Buffer) => 'pass' | 'hold',
  write: (bytes: Buffer) => void,
  onHeld: (frame: Buffer) => void = write,
): (chunk: Buffer) => void {
  let head: Buffer[] = [];
  let headLength = 0;
  /** Bytes of the current frame still to pass on, or to gather into `held`. */
  let left = 0;
  let held: Buffer[] | null = null;
  return (chunk) => {
    let o = 0;
    while (o < chunk.length) {
      if (left > 0) {
        const n = Math.min(left, chunk.length - o);
        const part = chunk.subarray(o, o + n);
        if (held) held.push(part);
        else write(part);
        left -= n;
        o += n;
        if (left === 0 && held) {
          onHeld(Buffer.concat(held));
          held = null;
        }
        continue;
      }
      const n = Math.min(headBytes - headLength, chunk.length - o);
      head.push(chunk.subarray(o, o + n));
      headLength += n;
      o += n;
      if (headLength < headBytes) break;
      const whole = head.length === 1 ? head[0]! : Buffer.concat(head, headLength);
      head = [];
      headLength = 0;
      left = whole.readInt32BE(0) + 4 - headBytes;
      if (decide(whole) === 'hold') held = [whole];
      else write(whole);
      if (left === 0 && held) {
        onHeld(Buffer.concat(held));
        held = null;
      }
    }
  };
}

/** Response frame: size(4) correlationId(4) body. Rewrites broker ports and a dead controller id in place. */
function rewriteMetadata(frame: Buffer, version: number, portMap: Map<number, number>): void {
  let o = 8;
  if (version >= 3) o += 4; // throttle_time_ms
  const n = frame.readInt32BE(o);
  o += 4;
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(frame.readInt32BE(o));
    o += 4;
    o += 2 + frame.readInt16BE(o); // host
    const port = frame.readInt32BE(o);
    const mapped = portMap.get(port);
    if (mapped !== undefined) frame.writeInt32BE(mapped, o);
    o += 4;
    if (version >= 1) o = skipNullableString(frame, o); // rack
  }
  if (version >= 2) o = skipNullableString(frame, o); // cluster_id
  if (version >= 1 && ids.length && !ids.includes(frame.readInt32BE(o))) frame.writeInt32BE(Math.min(...ids), o);
}

function rewriteFindCoordinator(frame: Buffer, version: number, portMap: Map<number, number>): void {
  let o = 8;
  if (version >= 1) o += 4; // throttle_time_ms
  o += 2; // error_code
  if (version >= 1) o = skipNullableString(frame, o); // error_message
  o += 4; // node_id
  o += 2 + frame.readInt16BE(o); // host
  const mapped = portMap.get(frame.readInt32BE(o));
  if (mapped !== undefined) frame.writeInt32BE(mapped, o);
}

function skipNullableString(frame: Buffer, o: number): number {
  const len = frame.readInt16BE(o);
  return o + 2 + (len < 0 ? 0 : len);
}
