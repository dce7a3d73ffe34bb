import http from 'node:http';
import net from 'node:net';
import { chmod, rm } from 'node:fs/promises';
import type { OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';

/**
 * A build's only way out: an HTTP proxy (CONNECT for https, absolute-URI requests for http) on a Unix socket that
 * is bind-mounted into the sandbox (the sandbox's own network namespace has nothing but loopback). Every
 * destination goes through the outbound URL guard the webhooks use: the name is resolved here, and a connection
 * is made only to an address that is public, so no build reaches loopback, the host's services (Postgres,
 * Redis, the service's ports) or a private range, whatever the name it asks for resolves to. Each refusal is a
 * line in the build's log.
 */
export interface EgressProxy {
  socketPath: string;
  /** Connections made and refused, for the build log's summary and tests. */
  readonly stats: { allowed: number; refused: number };
  close(): Promise<void>;
}

export interface EgressProxyOptions {
  socketPath: string;
  /** Which destinations are dialable: the outbound guard's rules for builds' egress. */
  guard: OutboundUrlGuard;
  onRefused(destination: string, why: string): void;
}

const CONNECT_TIMEOUT_MS = 10_000;
const MAX_CONNECTIONS = 256;

export async function startEgressProxy(o: EgressProxyOptions): Promise<EgressProxy> {
  const stats = { allowed: 0, refused: 0 };
  const sockets = new Set<net.Socket>();

  /** The first public address of host, or why there is none. */
  async function dialable(host: string): Promise<{ address: string } | { refused: string }> {
    try {
      const addrs = await o.guard.resolveHost(host, 'build_egress');
      return { address: addrs[0]!.address };
    } catch (err) {
      return { refused: (err as Error).message };
    }
  }

  function refuse(destination: string, why: string): void {
    stats.refused++;
    o.onRefused(destination, why);
  }

  const server = http.createServer(async (req, res) => {
    // Plain http through the proxy: GET http://host/path
    let url: URL;
    try {
      url = new URL(req.url ?? '');
      if (url.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('egress proxy: absolute http:// URLs or CONNECT only\n');
      return;
    }
    const target = await dialable(url.hostname);
    if ('refused' in target) {
      refuse(url.host, target.refused);
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`egress refused: ${target.refused}\n`);
      return;
    }
    stats.allowed++;
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    delete headers['proxy-authorization'];
    const upstream = http.request(
      {
        host: target.address,
        port: url.port || 80,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
        timeout: CONNECT_TIMEOUT_MS,
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502, { 'content-type': 'text/plain' }).end('egress: upstream failed\n')));
    req.pipe(upstream);
  });

  server.on('connect', async (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
    if (!m || Number(m[2]) > 65535) {
      client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const [, host, port] = m;
    const target = await dialable(host!);
    if ('refused' in target) {
      refuse(`${host}:${port}`, target.refused);
      client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\negress refused: ${target.refused}\n`);
      return;
    }
    stats.allowed++;
    const upstream = net.connect({ host: target.address, port: Number(port), timeout: CONNECT_TIMEOUT_MS });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.once('connect', () => {
      upstream.setTimeout(0);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on('timeout', () => upstream.destroy());
    upstream.on('error', () => {
      if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      client.destroy();
    });
    client.on('close', () => upstream.destroy());
  });

  // A build cannot spend the builder's file descriptors: past this many open connections, new ones are dropped.
  server.maxConnections = MAX_CONNECTIONS;
  await rm(o.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(o.socketPath, resolve));
  // The build runs as another (unprivileged) user: it may connect, and only the sandbox sees the path.
  await chmod(o.socketPath, 0o666);
  return {
    socketPath: o.socketPath,
    stats,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(o.socketPath, { force: true });
    },
  };
}
