import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTPS receiver on loopback for webhook tests: a self-signed certificate made at test time
 * with openssl (CN=localhost, SANs localhost and 127.0.0.1), trusted by the test through
 * the test outbound guard's `ca`. Records every request with its raw body; `respond` chooses the answer.
 */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface Answer {
  status: number;
  /** Never answer (timeouts). */
  hang?: boolean;
  /** Drop the connection without an answer (a reset). */
  reset?: boolean;
  /** Answer after this long (a slow receiver). */
  delayMs?: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface HttpsReceiver {
  url: string;
  port: number;
  cert: string;
  requests: ReceivedRequest[];
  /** TLS connections accepted so far (kept-alive connections carry many requests). */
  connections: number;
  respond: (req: ReceivedRequest) => Answer;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** `names`: more DNS names the certificate holds (a stand-in served under a name the test's guard resolves). */
export function makeSelfSignedCert(names: string[] = []): { key: string; cert: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'whk-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
        '-subj',
        '/CN=localhost',
        '-addext',
        `subjectAltName=DNS:localhost,${names.map((n) => `DNS:${n},`).join('')}IP:127.0.0.1,IP:::1`,
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const { key, cert } = makeSelfSignedCert();
  const requests: ReceivedRequest[] = [];
  const waiters: Array<() => void> = [];
  const recv: HttpsReceiver = {
    url: '',
    port: 0,
    cert,
    requests,
    connections: 0,
    respond: () => ({ status: 200 }),
    async waitFor(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${requests.length} requests, expected ${count}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
      return requests;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  const server = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(entry);
      const a = recv.respond(entry);
      waiters.splice(0).forEach((w) => w());
      if (a.hang) return;
      if (a.reset) return req.socket.destroy();
      const answer = () => {
        res.writeHead(a.status, a.headers ?? {});
        res.end(a.body ?? '');
        waiters.splice(0).forEach((w) => w());
      };
      if (a.delayMs) setTimeout(answer, a.delayMs);
      else answer();
    });
  });
  server.on('secureConnection', () => recv.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  recv.port = (server.address() as AddressInfo).port;
  recv.url = `https://127.0.0.1:${recv.port}/hook`;
  return recv;
}
