import http from 'node:http';
import type { Logger } from '../logger.ts';
import type { Ops } from './ops.ts';

/**
 * The processor's and the builder's only HTTP: `/livez`, `/readyz` and `/metrics` (ops.ts) on PORT, for the
 * orchestrator's probes and Prometheus. Every other request, /metrics without the token included, is 404
 * `not_found`; a request node cannot parse is 400 `invalid_request`. Nothing here reads a body.
 */
export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

const NOT_FOUND = JSON.stringify({ error: 'not_found', message: 'no such route' });
const MALFORMED = JSON.stringify({ error: 'invalid_request', message: 'malformed HTTP request' });

export async function startOpsServer(ops: Ops, opts: { port: number; host?: string; logger: Logger }): Promise<OpsServer> {
  const log = opts.logger.child({ component: 'ops-server' });
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const method = req.method ?? '';
    if ((method !== 'GET' && method !== 'HEAD') || !ops.serves(path, req.headers.authorization)) {
      res.writeHead(404, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(NOT_FOUND);
      return;
    }
    ops.answer(path).then(
      (a) => {
        res.writeHead(a.status, Object.fromEntries(a.headers));
        res.end(method === 'HEAD' ? undefined : a.body);
      },
      (err) => {
        log.error({ err }, 'an ops route failed');
        res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: 'internal', message: 'internal error' }));
      },
    );
  });
  server.on('clientError', (err, socket) => {
    if (!socket.writable) return socket.destroy();
    socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${MALFORMED.length}\r\nConnection: close\r\n\r\n${MALFORMED}`);
    log.debug({ err: err.message }, 'malformed request refused');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : opts.port;
  log.info({ port }, 'ops routes listening (/livez, /readyz, /metrics)');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
